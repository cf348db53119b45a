package anthropicjson

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/openaijson"
)

var testNow = time.Unix(1_764_590_000, 0)

func recording(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/recordings/" + name)
	require.NoError(t, err)
	return data
}

// Each recorded answer, translated and written as the REST surface writes it,
// is the chat.completion OpenAI would have sent, member by member.
func TestToCompletionRecordings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ file, want string }{
		{"messages.json", `{"id":"msg_013LBDy1nvGiRgxiRAWseYRS","object":"chat.completion","created":1764590000,"model":"claude-sonnet-4-20250514",
			"choices":[{"index":0,"message":{"role":"assistant","content":"Hello World"},"finish_reason":"stop"}],
			"usage":{"prompt_tokens":14,"completion_tokens":5,"total_tokens":19,"prompt_tokens_details":{"cached_tokens":0}}}`},
		{"messages_with_params.json", `{"id":"msg_01J9EE5VSWbER7SNDLc82bwt","object":"chat.completion","created":1764590000,"model":"claude-sonnet-4-20250514",
			"choices":[{"index":0,"message":{"role":"assistant","content":"1, 2, "},"finish_reason":"stop","stop_reason":"3"}],
			"usage":{"prompt_tokens":25,"completion_tokens":8,"total_tokens":33,"prompt_tokens_details":{"cached_tokens":0,"cache_creation_tokens":0}}}`},
		{"messages_with_tools.json", `{"id":"msg_01LEocKDcwMbVwu5WfQD4F9e","object":"chat.completion","created":1764590000,"model":"claude-sonnet-4-20250514",
			"choices":[{"index":0,"message":{"role":"assistant","content":"I'll check the current weather in Paris for you.",
				"tool_calls":[{"id":"toolu_01Dq95J3WcnLmvSvBpAuaXwi","type":"function","function":{"name":"get_weather","arguments":"{\"location\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}],
			"usage":{"prompt_tokens":380,"completion_tokens":65,"total_tokens":445,"prompt_tokens_details":{"cached_tokens":0,"cache_creation_tokens":0}}}`},
		{"messages_extended_thinking.json", `{"id":"msg_01MHEipmYGTxtwNoLd4876Ug","object":"chat.completion","created":1764590000,"model":"claude-sonnet-4-20250514",
			"choices":[{"index":0,"message":{"role":"assistant","content":"To solve for x in the equation x + 5 = 12, I need to isolate x.\n\nI'll subtract 5 from both sides:\nx + 5 = 12\nx + 5 - 5 = 12 - 5\nx = 7\n\nLet me verify: 7 + 5 = 12 ✓\n\nTherefore, x = 7.",
				"reasoning_content":"I need to solve for x in the equation x + 5 = 12.\n\nTo isolate x, I need to subtract 5 from both sides of the equation:\n\nx + 5 = 12\nx + 5 - 5 = 12 - 5\nx = 7\n\nLet me check: If x = 7, then x + 5 = 7 + 5 = 12 ✓\n\nSo x = 7.",
				"thinking_blocks":[{"type":"thinking","thinking":"I need to solve for x in the equation x + 5 = 12.\n\nTo isolate x, I need to subtract 5 from both sides of the equation:\n\nx + 5 = 12\nx + 5 - 5 = 12 - 5\nx = 7\n\nLet me check: If x = 7, then x + 5 = 7 + 5 = 12 ✓\n\nSo x = 7.",
				"signature":"EoQDCkYICxgCKkD/7LGRV3nhFx7eDr0a8CqN9Q7VPNpcIwqMFQzxg6yM6cO8+q0blgDq+FxNpRMTkCjr3IJM6NaGVts1UOfeU5aNEgxb0pVzXeXVpI7s+Z4aDE478qswmtW5VM64tCIw0s9xrQpgRYkAQXva9t8ffdPRTNonQJha21BqfjukLhWjHR9NjkDoP7Qwsg1Y/puqKusBe7vIpKbZDnINky4NLhrdk10PAhtp428bEsRkJYKhoSfNfmxO6KQUH4xA7zXA4FWNwrrWtbaq8Wjy7A6NQ5RMCzxqOa1gzUpI06JOJf47QcjJuJmu6IzjL8Wj6e0vg1v8AQyiLQRh+vMlTkCmT1p2rmmUfrqGA68oEKWt6HkytfiRrkw3UrbIqjOlPlWYmFSh3ypnYHV91QILr8uoaRivkLko8eTMnS2dq8qKBJyH+nZvKjNnQg2fz4Xj25wfDyiB6dQ2zXPL1vdMurqfzsM2ZKoihxVGCPkfstDG24iadpjrH09hqTriwIVspRgB"}]},
				"finish_reason":"stop"}],
			"usage":{"prompt_tokens":53,"completion_tokens":211,"total_tokens":264,"prompt_tokens_details":{"cached_tokens":0,"cache_creation_tokens":0}}}`},
		{"messages_multi_turn.json", `{"id":"msg_01B3jbiKZLmG7XyMkgNMLirX","object":"chat.completion","created":1764590000,"model":"claude-sonnet-4-20250514",
			"choices":[{"index":0,"message":{"role":"assistant","content":"16"},"finish_reason":"stop"}],
			"usage":{"prompt_tokens":28,"completion_tokens":5,"total_tokens":33,"prompt_tokens_details":{"cached_tokens":0,"cache_creation_tokens":0}}}`},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			c, err := ToCompletionAt(recording(t, tc.file), testNow)
			require.NoError(t, err)
			require.JSONEq(t, tc.want, string(openaijson.Marshal(c)))
		})
	}
}

func TestToCompletion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, in, want string }{
		{"cache counts join prompt_tokens",
			`{"id":"m","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"stop_reason":"max_tokens","stop_sequence":null,
			  "usage":{"input_tokens":10,"output_tokens":3,"cache_read_input_tokens":100,"cache_creation_input_tokens":20}}`,
			`{"id":"m","object":"chat.completion","created":1764590000,"model":"c","choices":[{"index":0,"message":{"role":"assistant","content":"ab"},"finish_reason":"length"}],
			  "usage":{"prompt_tokens":130,"completion_tokens":3,"total_tokens":133,"prompt_tokens_details":{"cached_tokens":100,"cache_creation_tokens":20}}}`},
		{"tool calls alone: content null",
			`{"id":"m","type":"message","role":"assistant","model":"c","content":[{"type":"tool_use","id":"t1","name":"f","input":{ "a" : [1, 2] }},{"type":"tool_use","id":"t2","name":"g","input":{}}],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":2}}`,
			`{"id":"m","object":"chat.completion","created":1764590000,"model":"c","choices":[{"index":0,"message":{"role":"assistant","content":null,
			  "tool_calls":[{"id":"t1","type":"function","function":{"name":"f","arguments":"{\"a\":[1,2]}"}},{"id":"t2","type":"function","function":{"name":"g","arguments":"{}"}}]},"finish_reason":"tool_calls"}],
			  "usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3,"prompt_tokens_details":{"cached_tokens":0}}}`},
		{"refusal, redacted thinking, server tool blocks left out",
			`{"id":"m","type":"message","role":"assistant","model":"c","content":[{"type":"redacted_thinking","data":"zz"},{"type":"server_tool_use","id":"s","name":"web_search","input":{}},{"type":"web_search_tool_result","tool_use_id":"s","content":[]}],"stop_reason":"refusal","usage":{"input_tokens":1,"output_tokens":0}}`,
			`{"id":"m","object":"chat.completion","created":1764590000,"model":"c","choices":[{"index":0,"message":{"role":"assistant","content":"","reasoning_content":"","thinking_blocks":[{"type":"redacted_thinking","data":"zz"}]},"finish_reason":"content_filter"}],
			  "usage":{"prompt_tokens":1,"completion_tokens":0,"total_tokens":1,"prompt_tokens_details":{"cached_tokens":0}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := ToCompletionAt([]byte(tc.in), testNow)
			require.NoError(t, err)
			require.JSONEq(t, tc.want, string(openaijson.Marshal(c)))
		})
	}
}

func TestToCompletionFailures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		want     error
	}{
		{"error body", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, &APIError{Type: "overloaded_error", Message: "Overloaded"}},
		{"not JSON", `{"type":`, ErrMalformed},
		{"not a message", `{"type":"completion"}`, ErrMalformed},
		{"content not an array", `{"type":"message","content":"x"}`, ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ToCompletionAt([]byte(tc.in), testNow)
			var ae *APIError
			if errors.As(tc.want, &ae) {
				var got *APIError
				require.ErrorAs(t, err, &got)
				require.Equal(t, ae, got)
				require.ErrorIs(t, err, ErrAPI)
				return
			}
			require.ErrorIs(t, err, tc.want)
		})
	}
}

func TestFinishReason(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"end_turn": "stop", "stop_sequence": "stop", "pause_turn": "stop", "": "stop",
		"max_tokens": "length", "model_context_window_exceeded": "length",
		"tool_use": "tool_calls", "refusal": "content_filter", "something_new": "something_new",
	} {
		t.Run(in, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, want, FinishReason(in))
		})
	}
}

func TestParseError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, typ, msg string
		ok           bool
	}{
		{`{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`, "rate_limit_error", "slow down", true},
		{`{"type":"error","error":{"message":"no type"}}`, "", "", false},
		{`{"error":{"type":"x","message":"y"}}`, "", "", false},
		{`<html>`, "", "", false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			typ, msg, ok := ParseError([]byte(tc.in))
			require.Equal(t, []any{tc.typ, tc.msg, tc.ok}, []any{typ, msg, ok})
		})
	}
}

func TestStatusAndType(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		typ    string
		status int
	}{
		{ErrorInvalidRequest, 400}, {ErrorAuthentication, 401}, {ErrorBilling, 402}, {ErrorPermission, 403},
		{ErrorNotFound, 404}, {ErrorRequestTooLarge, 413}, {ErrorRateLimit, 429}, {ErrorAPI, 500},
		{ErrorTimeout, 504}, {ErrorOverloaded, 529},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.status, StatusForType(tc.typ))
			require.Equal(t, tc.typ, TypeForStatus(tc.status))
		})
	}
	require.Equal(t, 500, StatusForType("new_error"))
	require.Equal(t, ErrorInvalidRequest, TypeForStatus(422))
	require.Equal(t, ErrorAPI, TypeForStatus(503))
}
