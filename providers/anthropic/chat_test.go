package anthropic_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/fakeupstream"
	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/providers/anthropic"
)

// TestRequestHeadersAndBody: what every call sends — path, x-api-key,
// anthropic-version (default and configured), the configured headers, the
// attempt's request id and idempotency key, the trace context — and the chat
// request translated, with the provider-local model and the default max_tokens.
func TestRequestHeadersAndBody(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		cfg       func(*anthropic.Config)
		version   string
		maxTokens float64
		call      func(c *anthropic.Client, ctx context.Context, a providers.Attempt) error
		stream    bool
	}{
		{"chat, defaults", func(*anthropic.Config) {}, "2023-06-01", 4096, chatCall, false},
		{"chat, configured", func(c *anthropic.Config) { c.Version = "2024-01-01"; c.DefaultMaxTokens = 77 }, "2024-01-01", 77, chatCall, false},
		{"stream", func(*anthropic.Config) {}, "2023-06-01", 4096, streamCall, true},
		{"messages", func(*anthropic.Config) {}, "2023-06-01", 10, messagesCall, false},
		{"stream messages", func(*anthropic.Config) {}, "2023-06-01", 10, streamMessagesCall, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up := newFake(t)
			c := newClient(t, up, func(cfg *anthropic.Config) {
				cfg.Headers = map[string]string{"anthropic-beta": "prompt-caching-2024-07-31"}
				tc.cfg(cfg)
			})
			sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5}, TraceFlags: trace.FlagsSampled})
			tctx := trace.ContextWithSpanContext(context.Background(), sc)
			a := providers.Attempt{Model: "claude-sonnet-4-20250514", RequestID: "req-42", IdempotencyKey: "idem-7"}
			require.NoError(t, tc.call(c, tctx, a))
			reqs := up.Requests()
			require.Len(t, reqs, 1)
			r := reqs[0]
			require.Equal(t, "/v1/messages", r.Path)
			require.Equal(t, key, r.Header.Get("X-Api-Key"))
			require.Empty(t, r.Header.Get("Authorization"))
			require.Equal(t, tc.version, r.Header.Get("Anthropic-Version"))
			require.Equal(t, "prompt-caching-2024-07-31", r.Header.Get("Anthropic-Beta"))
			require.Equal(t, "req-42", r.Header.Get("X-Request-Id"))
			require.Equal(t, "idem-7", r.Header.Get("Idempotency-Key"))
			require.Equal(t, "application/json", r.Header.Get("Content-Type"))
			require.Contains(t, r.Header.Get("Traceparent"), sc.TraceID().String())
			body := r.JSON()
			require.Equal(t, "claude-sonnet-4-20250514", body["model"])
			require.Equal(t, tc.maxTokens, body["max_tokens"])
			if tc.stream {
				require.Equal(t, true, body["stream"])
				require.Equal(t, "text/event-stream", r.Header.Get("Accept"))
			} else {
				require.NotEqual(t, true, body["stream"])
			}
		})
	}
}

func chatCall(c *anthropic.Client, ctx context.Context, a providers.Attempt) error {
	req := chatRequest()
	req.Attempt = a
	_, err := c.Chat(ctx, req)
	return err
}

func streamCall(c *anthropic.Client, ctx context.Context, a providers.Attempt) error {
	req := chatRequest()
	req.Attempt = a
	s, err := c.Stream(ctx, req)
	if err != nil {
		return err
	}
	defer s.Close()
	for {
		if _, err := s.Recv(); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

const nativeBody = `{"model":"claude-x","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}]}`

func messagesCall(c *anthropic.Client, ctx context.Context, a providers.Attempt) error {
	_, err := c.Messages(ctx, a, []byte(nativeBody))
	return err
}

func streamMessagesCall(c *anthropic.Client, ctx context.Context, a providers.Attempt) error {
	s, err := c.StreamMessages(ctx, a, []byte(strings.Replace(nativeBody, `"max_tokens":10`, `"max_tokens":10,"stream":true`, 1)))
	if err != nil {
		return err
	}
	defer s.Close()
	for {
		if _, err := s.Next(); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// TestChatTranslatesTheRequest: the chat request's members reach Anthropic in its
// terms (system, merged turns, stop_sequences, temperature, tools).
func TestChatTranslatesTheRequest(t *testing.T) {
	t.Parallel()
	up := newFake(t)
	c := newClient(t, up)
	req := chatRequest()
	req.Body = &pb.ChatCompletionRequest{}
	require.NoError(t, protojson.Unmarshal([]byte(`{"model":"claude/x","max_tokens":99,"temperature":0.5,"stop":["3"],
		"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"a"},{"role":"user","content":"b"}],
		"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]}`), req.Body))
	_, err := c.Chat(ctx, req)
	require.NoError(t, err)
	body := up.Requests()[0].JSON()
	require.Equal(t, float64(99), body["max_tokens"])
	require.Equal(t, 0.5, body["temperature"])
	require.Equal(t, []any{"3"}, body["stop_sequences"])
	require.Contains(t, toJSON(t, body["system"]), "be brief")
	require.Len(t, body["messages"], 1, "consecutive user turns are merged")
	require.Equal(t, "get_weather", body["tools"].([]any)[0].(map[string]any)["name"])
	require.Equal(t, "claude/x", req.Body.Model, "the client's request is left as it was")
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestUnsupportedParameters: what Anthropic cannot take is a 400 naming the
// parameter and the provider, and nothing is sent.
func TestUnsupportedParameters(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body, param string
	}{
		{"logit_bias", `{"logit_bias":{"50256":-100}}`, "logit_bias"},
		{"n > 1", `{"n":2}`, "n"},
		{"json_schema", `{"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object"}}}}`, "response_format"},
	}
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{true: " stream", false: ""}[stream], func(t *testing.T) {
				t.Parallel()
				up := newFake(t)
				c := newClient(t, up)
				req := chatRequest()
				extra := &pb.ChatCompletionRequest{}
				require.NoError(t, protojson.Unmarshal([]byte(tc.body), extra))
				extra.Messages = req.Body.Messages
				req.Body = extra
				var err error
				if stream {
					_, err = c.Stream(ctx, req)
				} else {
					_, err = c.Chat(ctx, req)
				}
				pe := providerError(t, err)
				require.Equal(t, http.StatusBadRequest, pe.Status)
				require.Equal(t, "unsupported_parameter", pe.Code)
				require.Equal(t, tc.param, pe.Param)
				require.Contains(t, pe.Message, tc.param)
				require.Contains(t, pe.Message, "claude", "the message names the provider")
				require.Zero(t, up.Count(), "nothing is sent")
			})
		}
	}
}

// TestChatRecordings replays the recorded messages through the fake and checks
// the translated chat.completion member by member.
func TestChatRecordings(t *testing.T) {
	t.Parallel()
	str := structpb.NewStringValue
	cases := []struct {
		file                string
		id, content, finish string
		prompt, completion  int32
		cached              float64
		toolName, toolArgs  string
		reasoningPrefix     string
		stopSequence        string
	}{
		{file: "messages.json", id: "msg_013LBDy1nvGiRgxiRAWseYRS", content: "Hello World", finish: "stop", prompt: 14, completion: 5},
		{file: "messages_multi_turn.json", id: "msg_01B3jbiKZLmG7XyMkgNMLirX", content: "16", finish: "stop", prompt: 28, completion: 5},
		{file: "messages_multimodal.json", id: "msg_01EhF3inwGP9NXuBMrwkUWy1", content: "In this Google logo", finish: "stop", prompt: 159, completion: 100},
		{file: "messages_with_params.json", id: "msg_01J9EE5VSWbER7SNDLc82bwt", content: "1, 2, ", finish: "stop", prompt: 25, completion: 8, stopSequence: "3"},
		{file: "messages_with_tools.json", id: "msg_01LEocKDcwMbVwu5WfQD4F9e", content: "I'll check the current weather in Paris for you.",
			finish: "tool_calls", prompt: 380, completion: 65, toolName: "get_weather", toolArgs: `{"location":"Paris"}`},
		{file: "messages_extended_thinking.json", id: "msg_01MHEipmYGTxtwNoLd4876Ug", content: "To solve for x", finish: "stop",
			prompt: 53, completion: 211, reasoningPrefix: "I need to solve for x"},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			up := newFake(t)
			c := newClient(t, up)
			up.Script(fakeupstream.Reply{Body: recording(t, tc.file)})
			out, err := c.Chat(ctx, chatRequest())
			require.NoError(t, err)
			require.Equal(t, tc.id, out.Id)
			require.Equal(t, "chat.completion", out.Object)
			require.Equal(t, "claude-sonnet-4-20250514", out.Model)
			require.NotZero(t, out.Created)
			require.Len(t, out.Choices, 1)
			ch := out.Choices[0]
			require.Equal(t, int32(0), ch.Index)
			require.Equal(t, tc.finish, ch.GetFinishReason())
			require.Equal(t, "assistant", ch.Message.Role)
			require.True(t, strings.HasPrefix(ch.Message.Content.GetStringValue(), tc.content), ch.Message.Content.GetStringValue())
			require.Equal(t, tc.prompt, out.Usage.PromptTokens)
			require.Equal(t, tc.completion, out.Usage.CompletionTokens)
			require.Equal(t, tc.prompt+tc.completion, out.Usage.TotalTokens)
			require.Equal(t, tc.cached, out.Usage.PromptTokensDetails.GetFields()["cached_tokens"].GetNumberValue())
			if tc.toolName != "" {
				require.Len(t, ch.Message.ToolCalls, 1)
				tcall := ch.Message.ToolCalls[0]
				require.Equal(t, "toolu_01Dq95J3WcnLmvSvBpAuaXwi", tcall.GetId())
				require.Equal(t, "function", tcall.GetType())
				require.Equal(t, tc.toolName, tcall.Function.GetName())
				require.JSONEq(t, tc.toolArgs, tcall.Function.GetArguments())
			} else {
				require.Empty(t, ch.Message.ToolCalls)
			}
			reasoning := ch.Message.GetExtra().GetFields()["reasoning_content"]
			if tc.reasoningPrefix != "" {
				require.True(t, strings.HasPrefix(reasoning.GetStringValue(), tc.reasoningPrefix))
				blocks := ch.Message.GetExtra().GetFields()["thinking_blocks"].GetListValue().GetValues()
				require.Len(t, blocks, 1)
				require.True(t, strings.HasPrefix(blocks[0].GetStructValue().GetFields()["signature"].GetStringValue(), "EoQDCkYICxgC"))
			} else {
				require.Nil(t, reasoning)
			}
			if tc.stopSequence != "" {
				require.Equal(t, str(tc.stopSequence).GetStringValue(), ch.GetExtra().GetFields()["stop_reason"].GetStringValue())
			}
		})
	}
}
