package anthropicjson

import (
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/stretchr/testify/require"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/openaijson"
)

func chatCompletionOf(t *testing.T, body string) *pb.ChatCompletion {
	t.Helper()
	c := &pb.ChatCompletion{}
	require.NoError(t, openaijson.UnmarshalCompletion([]byte(body), c))
	return c
}

func TestFromCompletion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, completion, model, want string }{
		{name: "text, cached usage",
			completion: `{"id":"chatcmpl-abc","model":"gpt-4o-2024","choices":[{"index":0,"message":{"role":"assistant","content":"Hi there"},"finish_reason":"stop"}],` +
				`"usage":{"prompt_tokens":20,"completion_tokens":3,"total_tokens":23,"prompt_tokens_details":{"cached_tokens":8}}}`,
			want: `{"id":"msg_abc","type":"message","role":"assistant","model":"gpt-4o-2024","content":[{"type":"text","text":"Hi there"}],` +
				`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":3,"cache_read_input_tokens":8,"cache_creation_input_tokens":0}}`},
		{name: "reasoning and tool calls",
			completion: `{"id":"x1","model":"o3","choices":[{"index":0,"message":{"role":"assistant","content":null,"reasoning_content":"Think.",` +
				`"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},` +
				`{"id":"call_2","type":"function","function":{"name":"now","arguments":""}}]},"finish_reason":"tool_calls"}]}`,
			model: "smart",
			want: `{"id":"msg_x1","type":"message","role":"assistant","model":"smart","content":[{"type":"thinking","thinking":"Think.","signature":""},` +
				`{"type":"tool_use","id":"call_1","name":"get_weather","input":{"city":"Paris"}},{"type":"tool_use","id":"call_2","name":"now","input":{}}],` +
				`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}`},
		{name: "length, text parts",
			completion: `{"id":"c","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},"finish_reason":"length"}]}`,
			want: `{"id":"msg_c","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ab"}],` +
				`"stop_reason":"max_tokens","stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}`},
		{name: "a tool call the caller's max_tokens cut",
			completion: `{"id":"c","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,` +
				`"tool_calls":[{"id":"t","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Par"}}]},"finish_reason":"length"}]}`,
			want: `{"id":"msg_c","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"t","name":"weather","input":{}}],` +
				`"stop_reason":"max_tokens","stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}`},
		{name: "refusal",
			completion: `{"id":"c","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]}`,
			want: `{"id":"msg_c","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"I can't help with that."}],` +
				`"stop_reason":"refusal","stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}`},
		{name: "empty answer still has a text block",
			completion: `{"id":"c","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"content_filter"}]}`,
			want: `{"id":"msg_c","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":""}],` +
				`"stop_reason":"refusal","stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := FromCompletion(chatCompletionOf(t, tc.completion), tc.model)
			require.NoError(t, err)
			require.JSONEq(t, tc.want, string(got))
			// The Go SDK reads it.
			var msg anthropic.Message
			require.NoError(t, msg.UnmarshalJSON(got))
			require.Equal(t, "message", string(msg.Type))
		})
	}
}

func TestFromCompletionRefusesWhatIsNotAMessage(t *testing.T) {
	t.Parallel()
	_, err := FromCompletion(chatCompletionOf(t, `{"id":"c","model":"m","choices":[]}`), "")
	require.ErrorContains(t, err, "no choices")
	_, err = FromCompletion(chatCompletionOf(t, `{"id":"c","model":"m","choices":[{"index":0,"message":{"role":"assistant",`+
		`"tool_calls":[{"id":"t","type":"function","function":{"name":"f","arguments":"[1,"}}]},"finish_reason":"tool_calls"}]}`), "")
	require.ErrorContains(t, err, "not a JSON object")
}

func TestMessageIDAndStopReasons(t *testing.T) {
	t.Parallel()
	require.Equal(t, "msg_abc", MessageID("chatcmpl-abc"))
	require.Equal(t, "msg_xyz", MessageID("xyz"))
	require.True(t, strings.HasPrefix(MessageID(""), "msg_"))
	require.NotEqual(t, MessageID(""), MessageID(""))
	for finish, want := range map[string]string{"stop": "end_turn", "": "end_turn", "length": "max_tokens", "tool_calls": "tool_use",
		"function_call": "tool_use", "content_filter": "refusal", "other": "end_turn"} {
		require.Equal(t, want, StopReasonFor(finish), finish)
	}
}
