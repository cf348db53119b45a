package anthropicjson

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/openaijson"
)

func TestToChat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, body, want string }{
		{name: "plain",
			body: `{"model":"claude","max_tokens":100,"messages":[{"role":"user","content":"Hello"}]}`,
			want: `{"model":"claude","max_tokens":100,"messages":[{"role":"user","content":"Hello"}]}`},
		{name: "system, sampling, stop sequences, user, top_k, stream",
			body: `{"model":"m","max_tokens":5,"stream":true,"system":[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}},{"type":"text","text":"Be kind."}],` +
				`"temperature":0.5,"top_p":0.9,"top_k":40,"stop_sequences":["END","STOP"],"metadata":{"user_id":"u-1"},"service_tier":"auto",` +
				`"messages":[{"role":"user","content":"hi"}]}`,
			want: `{"model":"m","max_tokens":5,"stream":true,"temperature":0.5,"top_p":0.9,"top_k":40,"stop":["END","STOP"],"user":"u-1",` +
				`"messages":[{"role":"system","content":"Be brief.\nBe kind."},{"role":"user","content":"hi"}]}`},
		{name: "content blocks: text, images, documents",
			body: `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},` +
				`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}},` +
				`{"type":"image","source":{"type":"url","url":"https://x.test/a.jpg"}},` +
				`{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBE"},"title":"a.pdf"},` +
				`{"type":"document","source":{"type":"text","media_type":"text/plain","data":"plain words"}}]}]}`,
			want: `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},` +
				`{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBO"}},{"type":"image_url","image_url":{"url":"https://x.test/a.jpg"}},` +
				`{"type":"file","file":{"file_data":"data:application/pdf;base64,JVBE","filename":"a.pdf"}},{"type":"text","text":"plain words"}]}]}`},
		{name: "tool use round trip, thinking, tools, tool_choice",
			body: `{"model":"m","max_tokens":5,"thinking":{"type":"enabled","budget_tokens":4096},` +
				`"tools":[{"name":"get_weather","description":"Weather now","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}],` +
				`"tool_choice":{"type":"any","disable_parallel_tool_use":true},"messages":[` +
				`{"role":"user","content":"Weather in Paris?"},` +
				`{"role":"assistant","content":[{"type":"thinking","thinking":"Use the tool.","signature":"sig"},{"type":"redacted_thinking","data":"xx"},` +
				`{"type":"text","text":"Checking."},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},` +
				`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"18C"}],"is_error":false},{"type":"text","text":"Thanks"}]}]}`,
			want: `{"model":"m","max_completion_tokens":5,"reasoning_effort":"medium","parallel_tool_calls":false,"tool_choice":"required",` +
				`"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather now","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}],` +
				`"messages":[{"role":"user","content":"Weather in Paris?"},` +
				`{"role":"assistant","content":"Checking.","reasoning_content":"Use the tool.","tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},` +
				`{"role":"tool","tool_call_id":"toolu_1","content":"18C"},{"role":"user","content":[{"type":"text","text":"Thanks"}]}]}`},
		{name: "tool_choice tool, tool_result string, assistant string",
			body: `{"model":"m","max_tokens":5,"tool_choice":{"type":"tool","name":"f"},"messages":[{"role":"assistant","content":"ok"},` +
				`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"done"}]}]}`,
			want: `{"model":"m","max_tokens":5,"tool_choice":{"type":"function","function":{"name":"f"}},` +
				`"messages":[{"role":"assistant","content":"ok"},{"role":"tool","tool_call_id":"t1","content":"done"}]}`},
		{name: "tool call only: no content; thinking budgets",
			body: `{"model":"m","max_tokens":5,"thinking":{"type":"enabled","budget_tokens":1024},"tool_choice":{"type":"none"},` +
				`"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]}]}`,
			want: `{"model":"m","max_completion_tokens":5,"reasoning_effort":"low","tool_choice":"none",` +
				`"messages":[{"role":"assistant","tool_calls":[{"id":"t","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`},
		{name: "thinking disabled",
			body: `{"model":"m","max_tokens":5,"thinking":{"type":"disabled"},"tool_choice":{"type":"auto"},"messages":[]}`,
			want: `{"model":"m","max_tokens":5,"tool_choice":"auto"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req, err := ToChat([]byte(tc.body))
			require.NoError(t, err)
			var got map[string]any
			require.NoError(t, json.Unmarshal(openaijson.Marshal(req), &got))
			if got["stream"] == false {
				delete(got, "stream") // openaijson writes it always
			}
			b, _ := json.Marshal(got)
			require.JSONEq(t, tc.want, string(b))
		})
	}
}

func TestToChatRefusesWhatChatCannotCarry(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body, param string
		unsupported       bool
	}{
		{name: "server tool", param: "tools[0].type", unsupported: true,
			body: `{"model":"m","max_tokens":5,"tools":[{"type":"web_search_20250305","name":"web_search"}],"messages":[]}`},
		{name: "unknown member", param: "mcp_servers", unsupported: true,
			body: `{"model":"m","max_tokens":5,"mcp_servers":[],"messages":[]}`},
		{name: "image in a tool result", param: "messages[0].content[0].content[0].type", unsupported: true,
			body: `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"image","source":{"type":"url","url":"u"}}]}]}]}`},
		{name: "file image source", param: "messages[0].content[0].source.type", unsupported: true,
			body: `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"file","file_id":"f"}}]}]}`},
		{name: "URL document", param: "messages[0].content[0].source", unsupported: true,
			body: `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"url","url":"u"}}]}]}`},
		{name: "unknown thinking type", param: "thinking.type", unsupported: true,
			body: `{"model":"m","max_tokens":5,"thinking":{"type":"sometimes"},"messages":[]}`},
		{name: "bad role", param: "messages[0].role",
			body: `{"model":"m","max_tokens":5,"messages":[{"role":"system","content":"x"}]}`},
		{name: "bad tool_choice", param: "tool_choice.type",
			body: `{"model":"m","max_tokens":5,"tool_choice":{"type":"maybe"},"messages":[]}`},
		{name: "missing max_tokens", param: "max_tokens",
			body: `{"model":"m","messages":[]}`},
		{name: "wrong type deep down", param: "messages.content",
			body: `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":5}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ToChat([]byte(tc.body))
			var se *SurfaceError
			require.ErrorAs(t, err, &se)
			require.Equal(t, tc.unsupported, se.Unsupported, se.Error())
			if tc.param != "messages.content" {
				require.Equal(t, tc.param, se.Param, se.Error())
			}
		})
	}
}

// TestAMemberOfTheWrongTypeIsNamed: a member the types cannot read is named by
// where it is, without the decoders' own type names, and a content that is
// neither a string nor a list of blocks says so where it is (system, a
// message's content), not as a whole-body error; lists give their indices.
func TestAMemberOfTheWrongTypeIsNamed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body, field, msg string
	}{
		{"system a number", `{"model":"m","max_tokens":5,"system":5,"messages":[{"role":"user","content":"hi"}]}`,
			"system", "Input should be a valid string or list of content blocks"},
		{"content a number", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":5}]}`,
			"messages[0].content", "Input should be a valid string or list of content blocks"},
		{"a block's text a number", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":5}]}]}`,
			"messages[0].content[0].text", "Input should be a valid string"},
		{"a later block's text a number", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"ok"},` +
			`{"role":"user","content":[{"type":"text","text":"fine"},{"type":"text","text":[1]}]}]}`,
			"messages[2].content[1].text", "Input should be a valid string"},
		{"a system block's text a number", `{"model":"m","max_tokens":5,"system":[{"type":"text","text":5}],"messages":[{"role":"user","content":"hi"}]}`,
			"system[0].text", "Input should be a valid string"},
		{"a tool's name a number", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","input_schema":{}},{"name":5}]}`,
			"tools[1].name", "Input should be a valid string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ToChat([]byte(tc.body))
			var se *SurfaceError
			require.ErrorAs(t, err, &se)
			require.Equal(t, tc.field, se.Param)
			require.Equal(t, tc.msg, se.Message)
		})
	}
}
