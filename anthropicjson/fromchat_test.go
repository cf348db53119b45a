package anthropicjson

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/openaijson"
)

// chatRequestJSON decodes an OpenAI request body as the REST surface does.
func chatRequestJSON(t testing.TB, body string) *pb.ChatCompletionRequest {
	t.Helper()
	req := &pb.ChatCompletionRequest{}
	require.NoError(t, openaijson.Unmarshal([]byte(body), req))
	return req
}

func TestFromChat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opt  Options
		in   string // OpenAI request body
		want string // Anthropic request body
	}{
		{"default max_tokens", Options{},
			`{"model":"x","messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"claude","max_tokens":4096,"messages":[{"role":"user","content":"hi"}]}`},
		{"configured default max_tokens and stream", Options{DefaultMaxTokens: 100, Stream: true},
			`{"model":"x","stream":false,"messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"claude","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{"max_completion_tokens wins over max_tokens", Options{},
			`{"model":"x","max_tokens":10,"max_completion_tokens":20,"messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"claude","max_tokens":20,"messages":[{"role":"user","content":"hi"}]}`},
		{"temperature 1 is Anthropic's highest", Options{},
			`{"model":"x","temperature":1,"messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"claude","max_tokens":4096,"temperature":1,"messages":[{"role":"user","content":"hi"}]}`},
		{"max_tokens", Options{},
			`{"model":"x","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"claude","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`},
		{"sampling, stop string, user", Options{},
			`{"model":"x","temperature":0.5,"top_p":0.9,"stop":"END","user":"u-1","n":1,"presence_penalty":0,"logprobs":false,"messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"claude","max_tokens":4096,"temperature":0.5,"top_p":0.9,"stop_sequences":["END"],"metadata":{"user_id":"u-1"},"messages":[{"role":"user","content":"hi"}]}`},
		{"stop array, safety_identifier", Options{},
			`{"model":"x","stop":["a","b"],"safety_identifier":"s-1","messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"claude","max_tokens":4096,"stop_sequences":["a","b"],"metadata":{"user_id":"s-1"},"messages":[{"role":"user","content":"hi"}]}`},
		{"system and developer messages become system, in order", Options{},
			`{"model":"x","messages":[{"role":"system","content":"one"},{"role":"user","content":"hi"},{"role":"developer","content":[{"type":"text","text":"two"}]}]}`,
			`{"model":"claude","max_tokens":4096,"system":[{"type":"text","text":"one"},{"type":"text","text":"two"}],"messages":[{"role":"user","content":"hi"}]}`},
		{"one system string stays a string", Options{},
			`{"model":"x","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]}`,
			`{"model":"claude","max_tokens":4096,"system":"be brief","messages":[{"role":"user","content":"hi"}]}`},
		{"cache_control on parts is kept", Options{},
			`{"model":"x","messages":[{"role":"system","content":[{"type":"text","text":"long","cache_control":{"type":"ephemeral"}}]},{"role":"user","content":"hi"}]}`,
			`{"model":"claude","max_tokens":4096,"system":[{"type":"text","text":"long","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"hi"}]}`},
		{"consecutive same-role turns merge", Options{},
			`{"model":"x","messages":[{"role":"user","content":"a"},{"role":"user","content":[{"type":"text","text":"b"}]},{"role":"assistant","content":"c"},{"role":"assistant","content":"d"}]}`,
			`{"model":"claude","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},{"role":"assistant","content":[{"type":"text","text":"c"},{"type":"text","text":"d"}]}]}`},
		{"images: data URL and https URL; detail ignored", Options{},
			`{"model":"x","messages":[{"role":"user","content":[{"type":"text","text":"what?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBOR","detail":"high"}},{"type":"image_url","image_url":{"url":"https://e.com/a.jpg"}}]}]}`,
			`{"model":"claude","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"what?"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBOR"}},{"type":"image","source":{"type":"url","url":"https://e.com/a.jpg"}}]}]}`},
		{"pdf file part is a document", Options{},
			`{"model":"x","messages":[{"role":"user","content":[{"type":"file","file":{"filename":"a.pdf","file_data":"data:application/pdf;base64,JVBER"}}]}]}`,
			`{"model":"claude","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBER"}}]}]}`},
		{"tools, tool_choice required, parallel_tool_calls false", Options{},
			`{"model":"x","tools":[{"type":"function","function":{"name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]},"strict":true}},{"type":"function","function":{"name":"now"}}],"tool_choice":"required","parallel_tool_calls":false,"messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"claude","max_tokens":4096,"tools":[{"name":"get_weather","description":"Weather","input_schema":{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}},{"name":"now","input_schema":{"type":"object","properties":{}}}],"tool_choice":{"type":"any","disable_parallel_tool_use":true},"messages":[{"role":"user","content":"hi"}]}`},
		{"tool_choice auto", Options{},
			`{"model":"x","tool_choice":"auto","messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"claude","max_tokens":4096,"tool_choice":{"type":"auto"},"messages":[{"role":"user","content":"hi"}]}`},
		{"tool_choice none", Options{},
			`{"model":"x","tool_choice":"none","parallel_tool_calls":false,"messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"claude","max_tokens":4096,"tool_choice":{"type":"none"},"messages":[{"role":"user","content":"hi"}]}`},
		{"tool_choice names a function", Options{},
			`{"model":"x","tool_choice":{"type":"function","function":{"name":"f"}},"messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"claude","max_tokens":4096,"tool_choice":{"type":"tool","name":"f"},"messages":[{"role":"user","content":"hi"}]}`},
		{"parallel_tool_calls false alone is auto without parallel use", Options{},
			`{"model":"x","parallel_tool_calls":false,"messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"claude","max_tokens":4096,"tool_choice":{"type":"auto","disable_parallel_tool_use":true},"messages":[{"role":"user","content":"hi"}]}`},
		{"tool calls and results, empty content beside calls dropped", Options{},
			`{"model":"x","messages":[{"role":"user","content":"weather?"},
			 {"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"location\":\"Paris\"}"}},{"id":"c2","type":"function","function":{"name":"now","arguments":""}}]},
			 {"role":"tool","tool_call_id":"c1","content":"sunny"},{"role":"tool","tool_call_id":"c2","name":"now","content":[{"type":"text","text":"noon"}]},{"role":"user","content":"thanks"}]}`,
			`{"model":"claude","max_tokens":4096,"messages":[{"role":"user","content":"weather?"},
			 {"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"get_weather","input":{"location":"Paris"}},{"type":"tool_use","id":"c2","name":"now","input":{}}]},
			 {"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"sunny"},{"type":"tool_result","tool_use_id":"c2","content":[{"type":"text","text":"noon"}]},{"type":"text","text":"thanks"}]}]}`},
		{"assistant thinking_blocks go back signed; reasoning_content alone is not sent", Options{},
			`{"model":"x","messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a","reasoning_content":"hm","thinking_blocks":[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"redacted_thinking","data":"xyz"}]},{"role":"user","content":"q2"},{"role":"assistant","content":"b","reasoning_content":"unsigned"}]}`,
			`{"model":"claude","max_tokens":4096,"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"redacted_thinking","data":"xyz"},{"type":"text","text":"a"}]},{"role":"user","content":"q2"},{"role":"assistant","content":"b"}]}`},
		{"assistant refusal is its text", Options{},
			`{"model":"x","messages":[{"role":"user","content":"q"},{"role":"assistant","content":null,"refusal":"no"}]}`,
			`{"model":"claude","max_tokens":4096,"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"no"}]}`},
		{"reasoning_effort is a thinking budget", Options{},
			`{"model":"x","reasoning_effort":"medium","max_completion_tokens":10000,"messages":[{"role":"user","content":"q"}]}`,
			`{"model":"claude","max_tokens":10000,"thinking":{"type":"enabled","budget_tokens":4096},"messages":[{"role":"user","content":"q"}]}`},
		{"reasoning_effort budget lowered under max_tokens", Options{},
			`{"model":"x","reasoning_effort":"high","messages":[{"role":"user","content":"q"}]}`,
			`{"model":"claude","max_tokens":4096,"thinking":{"type":"enabled","budget_tokens":4095},"messages":[{"role":"user","content":"q"}]}`},
		{"reasoning_effort none", Options{},
			`{"model":"x","reasoning_effort":"none","messages":[{"role":"user","content":"q"}]}`,
			`{"model":"claude","max_tokens":4096,"messages":[{"role":"user","content":"q"}]}`},
		{"explicit thinking wins over reasoning_effort; Anthropic members pass", Options{},
			`{"model":"x","reasoning_effort":"low","thinking":{"type":"enabled","budget_tokens":2000},"top_k":5,"service_tier":"auto","store":false,"modalities":["text"],"messages":[{"role":"user","content":"q"}]}`,
			`{"model":"claude","max_tokens":4096,"thinking":{"type":"enabled","budget_tokens":2000},"top_k":5,"service_tier":"auto","messages":[{"role":"user","content":"q"}]}`},
		{"response_format text", Options{},
			`{"model":"x","response_format":{"type":"text"},"messages":[{"role":"user","content":"q"}]}`,
			`{"model":"claude","max_tokens":4096,"messages":[{"role":"user","content":"q"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := FromChat(chatRequestJSON(t, tc.in), "claude", tc.opt)
			require.NoError(t, err)
			require.JSONEq(t, tc.want, string(out))
		})
	}
}

func TestFromChatRefuses(t *testing.T) {
	t.Parallel()
	user := `"messages":[{"role":"user","content":"q"}]`
	for _, tc := range []struct {
		name, in, param string
	}{
		{"n > 1", `{"n":2,` + user + `}`, "n"},
		{"logit_bias", `{"logit_bias":{"50256":-100},` + user + `}`, "logit_bias"},
		{"logprobs", `{"logprobs":true,` + user + `}`, "logprobs"},
		{"top_logprobs", `{"top_logprobs":3,` + user + `}`, "top_logprobs"},
		{"presence_penalty", `{"presence_penalty":0.5,` + user + `}`, "presence_penalty"},
		{"frequency_penalty", `{"frequency_penalty":-1,` + user + `}`, "frequency_penalty"},
		{"seed", `{"seed":7,` + user + `}`, "seed"},
		{"temperature over 1", `{"temperature":1.5,` + user + `}`, "temperature"},
		{"metadata", `{"metadata":{"k":"v"},` + user + `}`, "metadata"},
		{"response_format json_object", `{"response_format":{"type":"json_object"},` + user + `}`, "response_format"},
		{"response_format json_schema", `{"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":{}}},` + user + `}`, "response_format"},
		{"audio", `{"audio":{"voice":"alloy","format":"wav"},` + user + `}`, "audio"},
		{"modalities with audio", `{"modalities":["text","audio"],` + user + `}`, "modalities"},
		{"prediction", `{"prediction":{"type":"content","content":"x"},` + user + `}`, "prediction"},
		{"store true", `{"store":true,` + user + `}`, "store"},
		{"service_tier flex", `{"service_tier":"flex",` + user + `}`, "service_tier"},
		{"web_search_options", `{"web_search_options":{},` + user + `}`, "web_search_options"},
		{"legacy functions", `{"functions":[{"name":"f"}],` + user + `}`, "functions"},
		{"safety_identifier beside another user", `{"user":"a","safety_identifier":"b",` + user + `}`, "safety_identifier"},
		{"stop sequences given twice", `{"stop":"a","stop_sequences":["b"],` + user + `}`, "stop_sequences"},
		{"stop of numbers", `{"stop":[1],` + user + `}`, "stop[0]"},
		{"reasoning_effort with too few tokens", `{"reasoning_effort":"low","max_tokens":1000,` + user + `}`, "reasoning_effort"},
		{"unknown reasoning_effort", `{"reasoning_effort":"extreme",` + user + `}`, "reasoning_effort"},
		{"custom tool", `{"tools":[{"type":"custom","custom":{"name":"x"}}],` + user + `}`, "tools[0].type"},
		{"tool without name", `{"tools":[{"type":"function","function":{"description":"x"}}],` + user + `}`, "tools[0].function.name"},
		{"tool_choice allowed_tools", `{"tool_choice":{"type":"allowed_tools","allowed_tools":{}},` + user + `}`, "tool_choice"},
		{"tool_choice unknown string", `{"tool_choice":"sometimes",` + user + `}`, "tool_choice"},
		{"invalid tool call arguments", `{"messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{not json"}}]}]}`, "messages[0].tool_calls[0].function.arguments"},
		{"tool call arguments not an object", `{"messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"[1]"}}]}]}`, "messages[0].tool_calls[0].function.arguments"},
		{"participant name", `{"messages":[{"role":"user","name":"bob","content":"q"}]}`, "messages[0].name"},
		{"unknown role", `{"messages":[{"role":"function","content":"q"}]}`, "messages[0].role"},
		{"audio part", `{"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"x","format":"wav"}}]}]}`, "messages[0].content[0].type"},
		{"image in a system message", `{"messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"https://e.com/a.png"}}]}]}`, "messages[0].content[0].type"},
		{"image of another scheme", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"ftp://e.com/a.png"}}]}]}`, "messages[0].content[0].image_url.url"},
		{"file id", `{"messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"file-1"}}]}]}`, "messages[0].content[0].file.file_id"},
		{"non-pdf file", `{"messages":[{"role":"user","content":[{"type":"file","file":{"file_data":"data:text/plain;base64,aGk="}}]}]}`, "messages[0].content[0].file.file_data"},
		{"unknown part member", `{"messages":[{"role":"user","content":[{"type":"text","text":"q","lang":"en"}]}]}`, "messages[0].content[0].lang"},
		{"tool message without id", `{"messages":[{"role":"tool","content":"x"}]}`, "messages[0].tool_call_id"},
		{"assistant audio", `{"messages":[{"role":"assistant","content":"a","audio":{"id":"x"}}]}`, "messages[0].audio"},
		{"bad thinking_blocks", `{"messages":[{"role":"assistant","content":"a","thinking_blocks":[{"type":"text","text":"x"}]}]}`, "messages[0].thinking_blocks[0].type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := FromChat(chatRequestJSON(t, tc.in), "claude", Options{})
			var ue *UnsupportedError
			require.ErrorAs(t, err, &ue)
			require.Equal(t, tc.param, ue.Param)
			require.True(t, errors.Is(err, ErrUnsupported))
			require.Contains(t, err.Error(), tc.param)
		})
	}
}
