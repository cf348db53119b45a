package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/fakeupstream"
)

// The /v1/messages surface driven by the official Go SDK (anthropic-sdk-go),
// against targets that speak OpenAI's wire: the fake upstream "up" and the
// simulator "sim". The SDK never retries here (WithMaxRetries(0)), so each call
// is one request.

const messagesKey = "sk-messages"

func startMessages(t *testing.T) *gateway {
	t.Helper()
	return start(t, "  master_key: "+messagesKey+"\n", withYAML("  sim:\n    type: simulator\n"))
}

// anthropicClient is the Go SDK pointed at the gateway (base URL without /v1:
// the SDK adds /v1/messages), with the master key as x-api-key unless opts give
// a key.
func anthropicClient(g *gateway, opts ...option.RequestOption) anthropic.Client {
	base := []option.RequestOption{option.WithBaseURL(strings.TrimSuffix(g.base, "/v1")), option.WithMaxRetries(0)}
	if len(opts) == 0 {
		opts = []option.RequestOption{option.WithAPIKey(messagesKey)}
	}
	return anthropic.NewClient(append(base, opts...)...)
}

// claudeSDK is anthropicClient, addressable (the SDK's services have pointer methods).
func claudeSDK(g *gateway, opts ...option.RequestOption) *anthropic.Client {
	c := anthropicClient(g, opts...)
	return &c
}

func userSays(text string) []anthropic.MessageParam {
	return []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(text))}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// lastRequest is the upstream's last request body.
func lastRequest(t *testing.T, up *fakeupstream.Server) map[string]any {
	t.Helper()
	reqs := up.Requests()
	require.NotEmpty(t, reqs)
	return reqs[len(reqs)-1].JSON()
}

func TestMessagesGoSDKAgainstAnOpenAITarget(t *testing.T) {
	t.Parallel()
	g := startMessages(t)
	ctx := ctxFor(t)

	t.Run("non-stream, x-api-key", func(t *testing.T) {
		c := anthropicClient(g)
		msg, err := c.Messages.New(ctx, anthropic.MessageNewParams{Model: "up/gpt-4o", MaxTokens: 64,
			System: []anthropic.TextBlockParam{{Text: "Be brief."}}, StopSequences: []string{"END"},
			Metadata: anthropic.MetadataParam{UserID: anthropic.String("user-7")}, Messages: userSays("Hello")})
		require.NoError(t, err)
		require.Equal(t, "Hello from the fake upstream!", msg.Content[0].Text)
		require.Equal(t, anthropic.StopReasonEndTurn, msg.StopReason)
		require.Equal(t, int64(17), msg.Usage.InputTokens)
		require.Equal(t, int64(4), msg.Usage.OutputTokens)
		require.True(t, strings.HasPrefix(msg.ID, "msg_"))
		up := lastRequest(t, g.up)
		require.Equal(t, "gpt-4o", up["model"])
		require.EqualValues(t, 64, up["max_tokens"])
		require.Equal(t, "user-7", up["user"])
		require.Equal(t, []any{"END"}, up["stop"])
		require.Equal(t, map[string]any{"role": "system", "content": "Be brief."}, up["messages"].([]any)[0])
	})

	t.Run("stream, bearer, accumulated", func(t *testing.T) {
		c := anthropicClient(g, option.WithAuthToken(messagesKey))
		st := c.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "up/gpt-4o", MaxTokens: 64, Messages: userSays("Hello")})
		var msg anthropic.Message
		var types []string
		for st.Next() {
			ev := st.Current()
			types = append(types, ev.Type)
			require.NoError(t, msg.Accumulate(ev))
		}
		require.NoError(t, st.Err())
		require.Equal(t, "message_start", types[0])
		require.Equal(t, "message_stop", types[len(types)-1])
		require.Equal(t, "Hello from the fake upstream!", msg.Content[0].Text)
		require.Equal(t, anthropic.StopReasonEndTurn, msg.StopReason)
		require.Equal(t, int64(17), msg.Usage.InputTokens, "usage the gateway asked the upstream for")
		require.Equal(t, int64(4), msg.Usage.OutputTokens)
		require.Equal(t, true, lastRequest(t, g.up)["stream_options"].(map[string]any)["include_usage"])
	})

	t.Run("tool use, then its result", func(t *testing.T) {
		g.up.Script(fakeupstream.Reply{Body: `{"id":"chatcmpl-t1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,` +
			`"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},` +
			`"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":30,"completion_tokens":8,"total_tokens":38}}`})
		c := anthropicClient(g)
		params := anthropic.MessageNewParams{Model: "up/gpt-4o", MaxTokens: 64, Messages: userSays("Weather in Paris?"),
			Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "get_weather", Description: anthropic.String("Current weather"),
				InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}, Required: []string{"city"}}}}},
			ToolChoice: anthropic.ToolChoiceUnionParam{OfAny: &anthropic.ToolChoiceAnyParam{}}}
		msg, err := c.Messages.New(ctx, params)
		require.NoError(t, err)
		require.Equal(t, anthropic.StopReasonToolUse, msg.StopReason)
		tool := msg.Content[0].AsToolUse()
		require.Equal(t, "call_1", tool.ID)
		require.Equal(t, "get_weather", tool.Name)
		require.JSONEq(t, `{"city":"Paris"}`, string(tool.Input))
		up := lastRequest(t, g.up)
		require.Equal(t, "required", up["tool_choice"])
		require.Equal(t, "get_weather", up["tools"].([]any)[0].(map[string]any)["function"].(map[string]any)["name"])

		params.Messages = append(params.Messages, msg.ToParam(),
			anthropic.NewUserMessage(anthropic.NewToolResultBlock("call_1", "18 degrees", false)))
		_, err = c.Messages.New(ctx, params)
		require.NoError(t, err)
		msgs := lastRequest(t, g.up)["messages"].([]any)
		require.Equal(t, map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "18 degrees"}, msgs[len(msgs)-1])
		assistant := msgs[len(msgs)-2].(map[string]any)
		require.Equal(t, "call_1", assistant["tool_calls"].([]any)[0].(map[string]any)["id"])
	})

	t.Run("stream tool use", func(t *testing.T) {
		head := `{"id":"chatcmpl-t2","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":`
		g.up.Script(fakeupstream.Reply{Events: []string{
			head + `{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_9","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}`,
			head + `{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\""}}]},"finish_reason":null}]}`,
			head + `{"tool_calls":[{"index":0,"function":{"arguments":":\"Oslo\"}"}}]},"finish_reason":null}]}`,
			head + `{},"finish_reason":"tool_calls"}]}`,
			"[DONE]"}})
		st := claudeSDK(g).Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "up/gpt-4o", MaxTokens: 64, Messages: userSays("Oslo?")})
		var msg anthropic.Message
		for st.Next() {
			require.NoError(t, msg.Accumulate(st.Current()))
		}
		require.NoError(t, st.Err())
		require.Equal(t, anthropic.StopReasonToolUse, msg.StopReason)
		require.Equal(t, "get_weather", msg.Content[0].Name)
		require.JSONEq(t, `{"city":"Oslo"}`, string(msg.Content[0].Input))
	})

	t.Run("thinking", func(t *testing.T) {
		g.up.Script(fakeupstream.Reply{Body: `{"id":"chatcmpl-r1","object":"chat.completion","created":1,"model":"o3","choices":[{"index":0,` +
			`"message":{"role":"assistant","content":"x = 7","reasoning_content":"12 - 5 is 7."},"finish_reason":"stop"}]}`})
		msg, err := claudeSDK(g).Messages.New(ctx, anthropic.MessageNewParams{Model: "up/gpt-4o", MaxTokens: 20000,
			Thinking: anthropic.ThinkingConfigParamOfEnabled(16384), Messages: userSays("x + 5 = 12")})
		require.NoError(t, err)
		require.Equal(t, "12 - 5 is 7.", msg.Content[0].AsThinking().Thinking)
		require.Equal(t, "x = 7", msg.Content[1].Text)
		sent := lastRequest(t, g.up)
		require.Equal(t, "high", sent["reasoning_effort"])
		// The models that reason refuse max_tokens.
		require.EqualValues(t, 20000, sent["max_completion_tokens"])
		require.NotContains(t, sent, "max_tokens")
	})

	t.Run("SDK-native errors", func(t *testing.T) {
		// A wait past the gateway's max_backoff: not retried there, passed on.
		g.up.Script(fakeupstream.Reply{Status: 429, Header: map[string]string{"Retry-After": "120"}})
		for _, tc := range []struct {
			name    string
			client  anthropic.Client
			model   string
			status  int
			errType string
		}{
			{"upstream rate limit", anthropicClient(g), "up/gpt-4o", 429, "rate_limit_error"},
			{"unknown model", anthropicClient(g), "no-such-model", 404, "not_found_error"},
			{"wrong key", anthropicClient(g, option.WithAPIKey("sk-wrong")), "up/gpt-4o", 401, "authentication_error"},
		} { // in order: the first takes the scripted 429
			t.Run(tc.name, func(t *testing.T) {
				_, err := tc.client.Messages.New(ctx, anthropic.MessageNewParams{Model: anthropic.Model(tc.model), MaxTokens: 5, Messages: userSays("hi")})
				var apiErr *anthropic.Error
				require.ErrorAs(t, err, &apiErr)
				require.Equal(t, tc.status, apiErr.StatusCode)
				require.Equal(t, tc.errType, string(apiErr.Type()))
				require.NotEmpty(t, apiErr.RequestID)
			})
		}
	})

	t.Run("incomplete stream is an error, never an end", func(t *testing.T) {
		g.up.Script(fakeupstream.Reply{CutAfter: 3})
		st := claudeSDK(g).Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "up/gpt-4o", MaxTokens: 64, Messages: userSays("Hello")})
		var types []string
		for st.Next() {
			types = append(types, st.Current().Type)
		}
		require.NotEmpty(t, types, "the stream started")
		require.NotContains(t, types, "message_stop")
		var apiErr *anthropic.Error
		require.ErrorAs(t, st.Err(), &apiErr)
		require.Equal(t, "api_error", string(apiErr.Type()))
		require.Contains(t, apiErr.Error(), "ended before its final event")
	})

	t.Run("request metrics as for chat calls", func(t *testing.T) {
		resp, err := http.Get("http://" + g.app.HTTPAddr() + "/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		text := string(b)
		for _, want := range []string{`endpoint="CreateMessage"`, `endpoint="StreamMessage"`, "switchyard_time_to_first_token_seconds_count",
			`switchyard_incomplete_streams_total{provider="up"`,
			`switchyard_tokens_total{`} {
			require.Contains(t, text, want)
		}
		for _, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(l, "switchyard_requests_total{") && strings.Contains(l, `endpoint="StreamMessage"`) &&
				strings.Contains(l, `provider="up"`) && strings.Contains(l, `status_class="2xx"`) {
				return
			}
		}
		t.Fatalf("no 200 StreamMessage request counted for provider up:\n%s", text)
	})

	t.Run("models.list reads /v1/models", func(t *testing.T) {
		iter := claudeSDK(g).Models.ListAutoPaging(ctx, anthropic.ModelListParams{})
		var ids []string
		for iter.Next() {
			ids = append(ids, iter.Current().ID)
		}
		require.NoError(t, iter.Err())
		require.Contains(t, ids, "up/gpt-4o")
		require.Contains(t, ids, "sim/sim-1")
	})

	t.Run("the simulator answers in Anthropic's shape", func(t *testing.T) {
		msg, err := claudeSDK(g).Messages.New(ctx, anthropic.MessageNewParams{Model: "sim/sim-1", MaxTokens: 64, Messages: userSays("Hello")})
		require.NoError(t, err)
		require.NotEmpty(t, msg.Content[0].Text)
		require.Equal(t, anthropic.StopReasonEndTurn, msg.StopReason)
		st := claudeSDK(g).Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "sim/sim-1", MaxTokens: 64, Messages: userSays("Hello")})
		var acc anthropic.Message
		for st.Next() {
			require.NoError(t, acc.Accumulate(st.Current()))
		}
		require.NoError(t, st.Err())
		require.Equal(t, msg.Content[0].Text, acc.Content[0].Text, "the simulator is deterministic, stream or not")
	})
}

// TestMessagesBadInputIsAnthropicShaped: what the SDK would not send, sent raw.
func TestMessagesBadInputIsAnthropicShaped(t *testing.T) {
	t.Parallel()
	g := startMessages(t)
	for _, tc := range []struct{ name, body, message string }{
		{"invalid JSON", `{"model": "up/gpt-4o",`, "not valid JSON"},
		{"missing max_tokens", `{"model":"up/gpt-4o","messages":[{"role":"user","content":"hi"}]}`, "max_tokens: Field required"},
		{"missing max_tokens, stream", `{"model":"up/gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`, "max_tokens: Field required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, g.base+"/messages", strings.NewReader(tc.body))
			require.NoError(t, err)
			req.Header.Set("x-api-key", messagesKey)
			req.Header.Set("anthropic-version", "2023-06-01")
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(body))
			var e struct {
				Type  string `json:"type"`
				Error struct{ Type, Message string }
			}
			require.NoError(t, json.Unmarshal(body, &e))
			require.Equal(t, "error", e.Type)
			require.Equal(t, "invalid_request_error", e.Error.Type)
			require.Contains(t, e.Error.Message, tc.message)
		})
	}
	require.Zero(t, g.up.Count(), "nothing reached the upstream")
	line := findLine(t, g, "CreateMessage")
	require.EqualValues(t, 400, line["status"])
}

// findLine is the last request line of method.
func findLine(t *testing.T, g *gateway, method string) map[string]any {
	t.Helper()
	var found map[string]any
	// The line is written as the call ends, which may be just after the client
	// has read the last event.
	require.Eventually(t, func() bool {
		for _, l := range strings.Split(g.logs.String(), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "request" && m["method"] == method {
				found = m
			}
		}
		return found != nil
	}, 5*time.Second, 10*time.Millisecond, "no request line for %s", method)
	return found
}

// A provider account's tpm is charged a message's estimate and then corrected
// by the tokens its answer says it used (17 + 4 here), as a chat call's is: the
// estimate (~310 tokens for ~1.2 KB and max_tokens 10) twice would pass tpm
// 400; corrected, a second call fits.
func TestMessagesCorrectTheTargetsTPM(t *testing.T) {
	t.Parallel()
	g := start(t, "  master_key: "+messagesKey+"\n", withProviderYAML("    limits: {tpm: 400}\n"))
	c := anthropicClient(g)
	prompt := strings.Repeat("a longer question to answer ", 43) // ~1.2 KB
	for i := range 2 {
		_, err := c.Messages.New(ctxFor(t), anthropic.MessageNewParams{Model: "up/gpt-4o", MaxTokens: 10, Messages: userSays(prompt)})
		require.NoError(t, err, "call %d", i+1)
	}
}
