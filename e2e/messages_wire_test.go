package e2e

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/fakeupstream"
)

// Anthropic's wire kept whole between /v1/messages and a chat target, and between
// a chat client and an Anthropic target: what a translation must not lose or
// invent.

// TestMessagesToolCallCutByMaxTokens: a chat target's tool call cut by the
// caller's own max_tokens (finish_reason length, arguments not yet JSON) is the
// answer Anthropic gives: a tool_use block and stop_reason max_tokens, once, not a
// 502 retried and failed over to another target.
func TestMessagesToolCallCutByMaxTokens(t *testing.T) {
	t.Parallel()
	g, anth := startNative(t)
	g.up.SetDefault(fakeupstream.Reply{Body: `{"id":"chatcmpl-t","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,` +
		`"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Par"}}]},` +
		`"finish_reason":"length"}],"usage":{"prompt_tokens":20,"completion_tokens":8,"total_tokens":28}}`})
	resp, got := postRaw(t, g, "/v1/messages", `{"model":"gpt-first","max_tokens":8,"tools":[{"name":"weather","input_schema":{"type":"object"}}],`+
		`"messages":[{"role":"user","content":"weather in Paris?"}]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(got))
	require.JSONEq(t, `[{"type":"tool_use","id":"call_1","name":"weather","input":{}}]`, contentOf(t, got))
	require.Contains(t, string(got), `"stop_reason":"max_tokens"`)
	require.Equal(t, 1, g.up.Count(), "answered once, not retried")
	require.Zero(t, anth.Count(), "not failed over")
}

// contentOf is a message's content array, as JSON.
func contentOf(t *testing.T, message []byte) string {
	t.Helper()
	var m struct{ Content json.RawMessage }
	require.NoError(t, json.Unmarshal(message, &m), string(message))
	return string(m.Content)
}
