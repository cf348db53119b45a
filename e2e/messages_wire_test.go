package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
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

// TestMessagesStreamOfInterleavedToolCalls: a chat target that begins two tool
// calls in one chunk and sends their arguments in the next makes blocks one after
// another on /v1/messages, which the Go SDK accumulates into both calls.
func TestMessagesStreamOfInterleavedToolCalls(t *testing.T) {
	t.Parallel()
	g, _ := startNative(t)
	chunk := func(delta, finish string) string {
		return `{"id":"chatcmpl-r","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":` + delta +
			`,"finish_reason":` + finish + `}]}`
	}
	g.up.Script(fakeupstream.Reply{Events: []string{
		chunk(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"f","arguments":""}},`+
			`{"index":1,"id":"call_b","type":"function","function":{"name":"g","arguments":""}}]}`, "null"),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":1}"}},{"index":1,"function":{"arguments":"{\"b\":2}"}}]}`, "null"),
		chunk(`{}`, `"tool_calls"`),
		"[DONE]",
	}})
	st := claudeSDK(g).Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{Model: "up/gpt-4o", MaxTokens: 64,
		Messages: userSays("call both")})
	var msg anthropic.Message
	open := int64(-1)
	for st.Next() {
		ev := st.Current()
		switch ev.Type {
		case "content_block_start":
			require.EqualValues(t, -1, open, "a block began while another was open")
			open = ev.Index
		case "content_block_delta":
			require.Equal(t, open, ev.Index, "a delta after its block's stop")
		case "content_block_stop":
			open = -1
		}
		require.NoError(t, msg.Accumulate(ev))
	}
	require.NoError(t, st.Err())
	require.Len(t, msg.Content, 2)
	require.JSONEq(t, `{"a":1}`, string(msg.Content[0].Input))
	require.JSONEq(t, `{"b":2}`, string(msg.Content[1].Input))
	require.Equal(t, anthropic.StopReasonToolUse, msg.StopReason)
}

// TestMessagesRoutesNotServedAnswerInAnthropicsShape: a method or a path under
// /v1/messages that Switchyard does not serve is an error the Anthropic SDK reads
// as one (type "error", its status), not OpenAI's shape.
func TestMessagesRoutesNotServedAnswerInAnthropicsShape(t *testing.T) {
	t.Parallel()
	g, _ := startNative(t)
	t.Run("the SDK's Message Batches API", func(t *testing.T) {
		_, err := claudeSDK(g).Messages.Batches.List(ctxFor(t), anthropic.MessageBatchListParams{})
		var apiErr *anthropic.Error
		require.ErrorAs(t, err, &apiErr)
		require.Equal(t, http.StatusNotFound, apiErr.StatusCode)
		require.Equal(t, "not_found_error", string(apiErr.Type()))
	})
	for _, tc := range []struct {
		method, path string
		status       int
		errType      string
	}{
		{"GET", "/v1/messages", http.StatusMethodNotAllowed, "invalid_request_error"},
		{"GET", "/v1/messages/count_tokens", http.StatusMethodNotAllowed, "invalid_request_error"},
		{"POST", "/v1/messages/batches", http.StatusNotFound, "not_found_error"},
		{"POST", "/v1/messages/", http.StatusNotFound, "not_found_error"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, strings.TrimSuffix(g.base, "/v1")+tc.path, strings.NewReader(`{}`))
			require.NoError(t, err)
			req.Header.Set("x-api-key", messagesKey)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.Equal(t, tc.status, resp.StatusCode, string(b))
			var e struct {
				Type  string
				Error struct{ Type, Message string }
			}
			require.NoError(t, json.Unmarshal(b, &e), string(b))
			require.Equal(t, "error", e.Type, string(b))
			require.Equal(t, tc.errType, e.Error.Type)
			require.Contains(t, e.Error.Message, tc.path)
		})
	}
}

// TestMixedChainHistoryReachesClaude: a conversation that a chat target answered
// once (Claude overloaded, claude-first failed over) goes on on Claude once it is
// back. The chat target's reasoning came as a thinking block with an empty
// signature, and its tool call with no thinking block at all; Anthropic refuses
// both in a later request's history (the fake Anthropic API does as it does), so
// Switchyard leaves out what Anthropic would refuse: the unsigned block, and
// thinking for the one request whose tool loop a chat target began.
func TestMixedChainHistoryReachesClaude(t *testing.T) {
	t.Parallel()
	g, anth := startNative(t)
	ctx := ctxFor(t)
	sdk := claudeSDK(g)
	overloaded := fakeupstream.Reply{Status: 529}

	// Turn 1: Claude is overloaded; GPT answers, with its reasoning.
	anth.Script(overloaded, overloaded)
	g.up.Script(fakeupstream.Reply{Body: `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"o3","choices":[{"index":0,` +
		`"message":{"role":"assistant","content":"x = 7","reasoning_content":"12 - 5 is 7."},"finish_reason":"stop"}]}`})
	history := userSays("x + 5 = 12")
	first, err := sdk.Messages.New(ctx, anthropic.MessageNewParams{Model: "claude-first", MaxTokens: 2048,
		Thinking: anthropic.ThinkingConfigParamOfEnabled(1024), Messages: history})
	require.NoError(t, err)
	require.Equal(t, "thinking", first.Content[0].Type)
	require.Empty(t, first.Content[0].Signature, "another model's reasoning is not signed")

	// Turn 2: Claude is back and gets the history, the unsigned block left out.
	history = append(history, first.ToParam(), anthropic.NewUserMessage(anthropic.NewTextBlock("and x + 6 = 12?")))
	second, err := sdk.Messages.New(ctx, anthropic.MessageNewParams{Model: "claude-first", MaxTokens: 2048,
		Thinking: anthropic.ThinkingConfigParamOfEnabled(1024), Messages: history})
	require.NoError(t, err, "Claude refused the history")
	require.NotEmpty(t, second.Content)
	sent := string(anth.Requests()[anth.Count()-1].Body)
	require.NotContains(t, sent, "12 - 5 is 7.", "the unsigned block was left out")
	require.Contains(t, sent, `"x = 7"`, "the rest of the chat target's turn was kept")
	require.Contains(t, sent, `"budget_tokens":1024`, "no tool loop: thinking stays on")

	// Turn 3: Claude is overloaded again, GPT makes a tool call (no thinking block).
	anth.Script(overloaded, overloaded)
	g.up.Script(fakeupstream.Reply{Body: `{"id":"chatcmpl-2","object":"chat.completion","created":1,"model":"o3","choices":[{"index":0,` +
		`"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"calc","arguments":"{\"e\":\"12-6\"}"}}]},` +
		`"finish_reason":"tool_calls"}]}`})
	tools := []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "calc", InputSchema: anthropic.ToolInputSchemaParam{}}}}
	history = append(history, second.ToParam(), anthropic.NewUserMessage(anthropic.NewTextBlock("use calc")))
	third, err := sdk.Messages.New(ctx, anthropic.MessageNewParams{Model: "claude-first", MaxTokens: 2048,
		Thinking: anthropic.ThinkingConfigParamOfEnabled(1024), Messages: history, Tools: tools})
	require.NoError(t, err)
	require.Equal(t, anthropic.StopReasonToolUse, third.StopReason)

	// Turn 4: the tool's result goes to Claude, which is back: the loop a chat
	// target began cannot have Claude's thinking, so this request goes without.
	history = append(history, third.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock("call_1", "6", false)))
	_, err = sdk.Messages.New(ctx, anthropic.MessageNewParams{Model: "claude-first", MaxTokens: 2048,
		Thinking: anthropic.ThinkingConfigParamOfEnabled(1024), Messages: history, Tools: tools})
	require.NoError(t, err, "Claude refused the tool loop")
	sent = string(anth.Requests()[anth.Count()-1].Body)
	require.NotContains(t, sent, `"budget_tokens"`, "thinking was left out of this one request")
	require.Contains(t, sent, `"tool_result"`)
}
