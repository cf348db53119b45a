package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/fakeupstream"
)

// The /v1/messages surface in front of a target that speaks Anthropic's wire
// (type anthropic, the fake Anthropic API "anth"), alone and in chains with the
// OpenAI fake upstream "up": both ways, stream or not.

const claudeModel = "claude-sonnet-4-20250514"

func startNative(t *testing.T) (*gateway, *fakeupstream.Anthropic) {
	t.Helper()
	anth := fakeupstream.NewAnthropic()
	t.Cleanup(anth.Close)
	g := start(t, "  master_key: "+messagesKey+"\n", withYAML(
		"  anth:\n    type: anthropic\n    base_url: "+anth.URL+"\n    api_key: sk-ant-upstream\n"+
			"resilience:\n  retry:\n    max_retries: 1\n    initial_backoff: 1ms\n"+
			"virtual_models:\n"+
			"  - source: claude-first\n    strategy: failover\n    targets:\n      - model: anth/"+claudeModel+"\n      - model: up/gpt-4o\n"+
			"  - source: gpt-first\n    strategy: failover\n    targets:\n      - model: up/gpt-4o\n      - model: anth/"+claudeModel+"\n"))
	return g, anth
}

func postRaw(t *testing.T, g *gateway, path, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, strings.TrimSuffix(g.base, "/v1")+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("x-api-key", messagesKey)
	req.Header.Set("Authorization", "Bearer "+messagesKey) // the chat routes read this one
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("content-type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b
}

// TestMessagesNativePassthroughKeepsEveryByte: the Anthropic upstream gets the
// client's body with only model rewritten (cache_control, a signature, a member
// no one knows yet, the client's spacing), and the client gets the upstream's
// answer as it came.
func TestMessagesNativePassthroughKeepsEveryByte(t *testing.T) {
	t.Parallel()
	g, anth := startNative(t)
	body := "{\"model\":  \"claude-first\",\n  \"max_tokens\": 256, \"system\": [{\"type\":\"text\",\"text\":\"Be brief.\",\"cache_control\":{\"type\":\"ephemeral\",\"ttl\":\"1h\"}}],\n" +
		"  \"messages\": [{\"role\":\"user\",\"content\":\"x+5=12\"},{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"12-5\",\"signature\":\"EoQDCkYICxgC\"},{\"type\":\"text\",\"text\":\"7\"}]},{\"role\":\"user\",\"content\":\"sure?\"}],\n" +
		"  \"thinking\": {\"type\":\"enabled\",\"budget_tokens\":1024}, \"future_member\": {\"nested\": [1, 2.50, \"\\u00e9\"]}}"
	answer := `{"id":"msg_native","type":"message","role":"assistant","model":"` + claudeModel + `","content":[{"type":"text","text":"Yes.","citations":null}],` +
		`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":21,"cache_creation_input_tokens":0,"cache_read_input_tokens":9,"output_tokens":2,"service_tier":"standard"},"container":null}`
	anth.Script(fakeupstream.Reply{Body: answer})
	resp, got := postRaw(t, g, "/v1/messages", body)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(got))
	require.Equal(t, answer, string(got), "the upstream's answer as it came")
	require.Equal(t, "anth/"+claudeModel, resp.Header.Get("X-Switchyard-Target"))
	reqs := anth.Requests()
	require.Len(t, reqs, 1)
	require.Equal(t, strings.Replace(body, `"claude-first"`, `"`+claudeModel+`"`, 1), string(reqs[0].Body), "only the model was rewritten")
	require.Equal(t, "/v1/messages", reqs[0].Path)
	require.Equal(t, "sk-ant-upstream", reqs[0].Header.Get("X-Api-Key"), "the provider's own key, not the client's")
	require.Zero(t, g.up.Count())
	line := findLine(t, g, "CreateMessage")
	require.EqualValues(t, 30, line["prompt_tokens"], "input, cache read and cache write tokens")
	require.EqualValues(t, 2, line["completion_tokens"])
}

func TestMessagesNativeWithTheSDKs(t *testing.T) {
	t.Parallel()
	g, anth := startNative(t)
	ctx := ctxFor(t)
	c := claudeSDK(g)

	t.Run("non-stream", func(t *testing.T) {
		msg, err := c.Messages.New(ctx, anthropic.MessageNewParams{Model: "anth/" + claudeModel, MaxTokens: 64,
			System: []anthropic.TextBlockParam{{Text: "Be brief.", CacheControl: anthropic.NewCacheControlEphemeralParam()}}, Messages: userSays("Hello")})
		require.NoError(t, err)
		require.Equal(t, "Hello from the fake upstream!", msg.Content[0].Text)
		require.Contains(t, string(anth.Requests()[anth.Count()-1].Body), `"cache_control":{"type":"ephemeral"}`)
	})

	t.Run("stream: the upstream's frames as they came", func(t *testing.T) {
		st := c.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "anth/" + claudeModel, MaxTokens: 64, Messages: userSays("Hello")})
		var msg anthropic.Message
		var types []string
		for st.Next() {
			types = append(types, st.Current().Type)
			require.NoError(t, msg.Accumulate(st.Current()))
		}
		require.NoError(t, st.Err())
		require.Equal(t, "message_stop", types[len(types)-1])
		require.Equal(t, "Hello from the fake upstream!", msg.Content[0].Text)

		// Byte for byte, pings included.
		frames := fakeupstream.AnthropicStream("msg_raw", claudeModel, "Hi there")
		anth.Script(fakeupstream.Reply{Events: frames})
		resp, got := postRaw(t, g, "/v1/messages", `{"model":"anth/`+claudeModel+`","max_tokens":9,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var want bytes.Buffer
		for _, f := range frames {
			want.WriteString(f + "\n\n")
		}
		require.Equal(t, want.String(), string(got))
	})

	t.Run("count_tokens", func(t *testing.T) {
		n, err := c.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: "anth/" + claudeModel, Messages: userSays("Hello")})
		require.NoError(t, err)
		require.Equal(t, int64(14), n.InputTokens)
		require.Equal(t, "/v1/messages/count_tokens", anth.Requests()[anth.Count()-1].Path)
		_, err = c.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: "up/gpt-4o", Messages: userSays("Hello")})
		var apiErr *anthropic.Error
		require.ErrorAs(t, err, &apiErr)
		require.Equal(t, http.StatusNotFound, apiErr.StatusCode)
		require.Equal(t, "not_found_error", string(apiErr.Type()))
	})

	t.Run("an upstream error keeps its status and type", func(t *testing.T) {
		anth.Script(fakeupstream.Reply{Status: 400, Body: fakeupstream.AnthropicErrorBody("invalid_request_error", "messages: roles must alternate")})
		_, err := c.Messages.New(ctx, anthropic.MessageNewParams{Model: "anth/" + claudeModel, MaxTokens: 64, Messages: userSays("Hello")})
		var apiErr *anthropic.Error
		require.ErrorAs(t, err, &apiErr)
		require.Equal(t, http.StatusBadRequest, apiErr.StatusCode)
		require.Equal(t, "invalid_request_error", string(apiErr.Type()))
		require.Contains(t, apiErr.Error(), "roles must alternate")
	})

	t.Run("a native stream cut short is an error, never an end", func(t *testing.T) {
		anth.Script(fakeupstream.Reply{CutAfter: 4})
		st := c.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "anth/" + claudeModel, MaxTokens: 64, Messages: userSays("Hello")})
		var types []string
		for st.Next() {
			types = append(types, st.Current().Type)
		}
		require.NotEmpty(t, types)
		require.NotContains(t, types, "message_stop")
		var apiErr *anthropic.Error
		require.ErrorAs(t, st.Err(), &apiErr)
	})
}

// TestMessagesMixedChains: a chain whose first target fails over to a target on
// the other wire answers in Anthropic's shape, both ways, stream or not.
func TestMessagesMixedChains(t *testing.T) {
	t.Parallel()
	g, anth := startNative(t)
	ctx := ctxFor(t)
	c := claudeSDK(g)
	for _, tc := range []struct {
		name, model, target string
		fail                func()
		failing             func() int // the failing target's request count
	}{
		{"Claude overloaded → GPT", "claude-first", "up/gpt-4o", func() {
			anth.SetDefault(fakeupstream.Reply{Status: 529, Header: map[string]string{"retry-after": "0"}})
			g.up.SetDefault(fakeupstream.Reply{})
		}, anth.Count},
		{"GPT down → Claude", "gpt-first", "anth/" + claudeModel, func() {
			anth.SetDefault(fakeupstream.Reply{})
			g.up.SetDefault(fakeupstream.Reply{Status: 503})
		}, g.up.Count},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.fail()
			before := tc.failing()
			var resp *http.Response
			msg, err := c.Messages.New(ctx, anthropic.MessageNewParams{Model: anthropic.Model(tc.model), MaxTokens: 64, Messages: userSays("Hello")},
				option.WithResponseInto(&resp))
			require.NoError(t, err)
			require.Equal(t, tc.target, resp.Header.Get("X-Switchyard-Target"))
			require.Equal(t, "Hello from the fake upstream!", msg.Content[0].Text)
			require.Equal(t, anthropic.StopReasonEndTurn, msg.StopReason)
			require.Greater(t, tc.failing(), before, "the first target was tried before the failover")

			st := c.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: anthropic.Model(tc.model), MaxTokens: 64, Messages: userSays("Hello")})
			var acc anthropic.Message
			for st.Next() {
				require.NoError(t, acc.Accumulate(st.Current()))
			}
			require.NoError(t, st.Err())
			require.Equal(t, "Hello from the fake upstream!", acc.Content[0].Text)
			require.Equal(t, anthropic.StopReasonEndTurn, acc.StopReason)
		})
	}
	line := findLine(t, g, "StreamMessage")
	require.EqualValues(t, 1, line["failovers"])
}

// A native /v1/messages stream whose message_delta gave the stop_reason is
// whole: a reset before message_stop ends it with Switchyard's own
// message_stop (as [DONE] on the chat wire), a success, not an error event.
func TestMessagesNativeStreamCutAfterItsStopReasonIsComplete(t *testing.T) {
	t.Parallel()
	g, anth := startNative(t)
	anth.Script(fakeupstream.Reply{Events: fakeupstream.AnthropicStream("msg_c", claudeModel, "one two three"), CutAfter: 8})
	resp, got := postRaw(t, g, "/v1/messages", `{"model":"anth/`+claudeModel+`","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(got))
	body := strings.TrimSpace(string(got))
	require.True(t, strings.HasSuffix(body, "event: message_stop\ndata: {\"type\":\"message_stop\"}"), body)
	require.NotContains(t, body, "event: error")
	require.EqualValues(t, "OK", findLine(t, g, "StreamMessage")["code"])
}

// TestAnAnthropicAnswerWithNoStopReasonIsNotASuccess: Anthropic gives every
// answer its stop_reason (message_delta, before message_stop, in a stream). A
// stream that stops without one was cut: before its first content it is a failed
// attempt (failed over), after it it ends incomplete; a message with no content
// and no stop_reason is an empty answer. Both surfaces; before, a finish "stop"
// was made up and each passed as a success.
func TestAnAnthropicAnswerWithNoStopReasonIsNotASuccess(t *testing.T) {
	t.Parallel()
	ev := fakeupstream.AnthropicEvent
	start := ev("message_start", `{"type":"message_start","message":{"id":"msg_e","type":"message","role":"assistant","model":"`+claudeModel+
		`","content":[],"stop_reason":null,"usage":{"input_tokens":3,"output_tokens":0}}}`)
	stop := ev("message_stop", `{"type":"message_stop"}`)
	text := []string{ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`),
		ev("content_block_stop", `{"type":"content_block_stop","index":0}`)}
	nullStop := ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":null},"usage":{"output_tokens":1}}`)
	empty := `{"id":"msg_e","type":"message","role":"assistant","model":"` + claudeModel +
		`","content":[],"stop_reason":null,"usage":{"input_tokens":3,"output_tokens":0}}`
	chat := func(model string, stream bool) string {
		return `{"model":"` + model + `","stream":` + fmt.Sprint(stream) + `,"messages":[{"role":"user","content":"hi"}]}`
	}
	native := func(model string, stream bool) string {
		return `{"model":"` + model + `","max_tokens":50,"stream":` + fmt.Sprint(stream) + `,"messages":[{"role":"user","content":"hi"}]}`
	}

	t.Run("nothing but message_start and message_stop fails over", func(t *testing.T) {
		t.Parallel()
		g, anth := startNative(t)
		anth.SetDefault(fakeupstream.Reply{Events: []string{start, stop}})
		for _, path := range []string{"/v1/chat/completions", "/v1/messages"} {
			body := chat("claude-first", true)
			if path == "/v1/messages" {
				body = native("claude-first", true)
			}
			resp, got := postRaw(t, g, path, body)
			require.Equal(t, http.StatusOK, resp.StatusCode, string(got))
			require.Equal(t, "up/gpt-4o", resp.Header.Get("X-Switchyard-Target"), "%s: %s", path, got)
		}
	})
	t.Run("text then message_stop without a stop_reason ends incomplete", func(t *testing.T) {
		t.Parallel()
		g, anth := startNative(t)
		for _, events := range [][]string{append(append([]string{start}, text...), stop), append(append([]string{start}, text...), nullStop, stop)} {
			anth.SetDefault(fakeupstream.Reply{Events: events})
			_, got := postRaw(t, g, "/v1/chat/completions", chat("anth/"+claudeModel, true))
			require.Contains(t, string(got), "stream_incomplete")
			require.NotContains(t, string(got), "[DONE]")
			_, got = postRaw(t, g, "/v1/messages", native("anth/"+claudeModel, true))
			require.Contains(t, string(got), "event: error")
			require.NotContains(t, string(got), "event: message_stop\n")
		}
	})
	t.Run("a message with no content and no stop_reason fails over", func(t *testing.T) {
		t.Parallel()
		g, anth := startNative(t)
		anth.SetDefault(fakeupstream.Reply{Body: empty})
		resp, got := postRaw(t, g, "/v1/chat/completions", chat("claude-first", false))
		require.Equal(t, http.StatusOK, resp.StatusCode, string(got))
		require.Equal(t, "up/gpt-4o", resp.Header.Get("X-Switchyard-Target"))
		resp, got = postRaw(t, g, "/v1/messages", native("claude-first", false))
		require.Equal(t, http.StatusOK, resp.StatusCode, string(got))
		require.Equal(t, "up/gpt-4o", resp.Header.Get("X-Switchyard-Target"))
		resp, got = postRaw(t, g, "/v1/messages", native("anth/"+claudeModel, false))
		require.Equal(t, http.StatusBadGateway, resp.StatusCode, string(got))
	})
}
