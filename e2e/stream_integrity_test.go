package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	adminpb "github.com/switchyard/switchyard/gen/switchyard/admin/v1"
	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/fakeupstream"
)

// Stream integrity (issue 15): retries up to the first byte, breakers that count
// streams broken after it, n > 1 completion, failover on context overflow.

// integrityRetries retries fast but lets a Retry-After of one second be honoured.
const integrityRetries = "resilience:\n  retry:\n    initial_backoff: 1ms\n    max_backoff: 2s\n"

// integrityChain runs Switchyard with providers up and backup, a virtual model
// resilient-chat → up/gpt-4o, backup/gpt-4o-mini, and the given resilience block.
func integrityChain(t *testing.T, serverYAML, resilienceYAML string) (*gateway, *fakeupstream.Server) {
	t.Helper()
	backup := fakeupstream.New("gpt-4o-mini")
	t.Cleanup(backup.Close)
	backup.SetDefault(fakeupstream.Reply{Text: "Hello from the backup!"})
	g := start(t, serverYAML, withYAML("  backup:\n    type: openai\n    base_url: "+backup.URL+"\n"+resilienceYAML+
		"virtual_models:\n  - source: resilient-chat\n    strategy: failover\n    targets:\n"+
		"      - model: up/gpt-4o\n      - model: backup/gpt-4o-mini\n"))
	return g, backup
}

// restStream posts a streaming request for model and returns the response.
func restStream(t *testing.T, g *gateway, model, extra string) *http.Response {
	t.Helper()
	return post(t, g.base+"/chat/completions", strings.Replace(chatBody, "up/gpt-4o", model, 1)+`,"stream":true`+extra+`}`)
}

// sseText is the content a client accumulates from SSE events, and whether the
// stream ended with [DONE] (complete) or with the in-band stream_incomplete error.
func sseText(t *testing.T, events []string) (text string, done, incomplete bool) {
	t.Helper()
	var b strings.Builder
	for i, ev := range events {
		switch {
		case ev == "[DONE]":
			require.Equal(t, len(events)-1, i, "[DONE] is the last event")
			done = true
		case strings.HasPrefix(ev, `{"error"`):
			require.Equal(t, len(events)-1, i, "the error is the last event")
			require.Contains(t, ev, `"stream_incomplete"`)
			incomplete = true
		default:
			var c struct {
				Choices []struct {
					Delta struct {
						Content string `json:"content"`
					} `json:"delta"`
				} `json:"choices"`
			}
			require.NoError(t, json.Unmarshal([]byte(ev), &c), ev)
			for _, ch := range c.Choices {
				b.WriteString(ch.Delta.Content)
			}
		}
	}
	return b.String(), done, incomplete
}

// grpcStreamText reads a gRPC stream to its end: the text and the final error
// (nil on a clean end).
func grpcStreamText(t *testing.T, g *gateway, model string, mutate func(*pb.ChatCompletionRequest)) (string, error, metadata.MD) {
	t.Helper()
	req := grpcReq()
	req.Model = model
	if mutate != nil {
		mutate(req)
	}
	var hdr metadata.MD
	st, err := pb.NewChatServiceClient(g.conn).StreamChatCompletion(context.Background(), req, grpc.Header(&hdr))
	require.NoError(t, err)
	var b strings.Builder
	for {
		c, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return b.String(), nil, hdr
		}
		if err != nil {
			return b.String(), err, hdr
		}
		for _, ch := range c.GetChoices() {
			b.WriteString(ch.GetDelta().GetContent())
		}
	}
}

func upBreaker(t *testing.T, g *gateway) *adminpb.Breaker {
	t.Helper()
	resp, err := adminpb.NewAdminServiceClient(g.conn).ListBreakers(context.Background(), &adminpb.ListBreakersRequest{})
	require.NoError(t, err)
	for _, b := range resp.GetBreakers() {
		if b.GetProvider() == "up" {
			return b
		}
	}
	t.Fatal("no breaker for up")
	return nil
}

// TestStreamRetriedOnTheSameTargetBeforeTheFirstByte: with no backup, a stream
// whose attempt fails before its first event is retried on the same target like
// a unary call, and the client gets one complete stream, each chunk once.
func TestStreamRetriedOnTheSameTargetBeforeTheFirstByte(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		first fakeupstream.Reply
		wait  time.Duration // the least the retry waited
	}{
		{"429 with Retry-After", fakeupstream.Reply{Status: 429, Header: map[string]string{"Retry-After": "1"}}, time.Second},
		{"503 with retry-after-ms", fakeupstream.Reply{Status: 503, Header: map[string]string{"Retry-After-Ms": "30"}}, 30 * time.Millisecond},
		{"reset before headers", fakeupstream.Reply{Reset: true}, 0},
		{"in-band error as the first event", fakeupstream.Reply{Events: []string{`{"error":{"message":"The server is overloaded","type":"server_error"}}`}}, 0},
		{"hidden 429 as the first event", fakeupstream.Reply{Events: []string{`{"error":{"message":"slow down","code":429}}`}}, 0},
		{"empty 200 stream", fakeupstream.Reply{Events: []string{}}, 0},
		{"200 stream of only [DONE]", fakeupstream.Reply{Events: []string{"[DONE]"}}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := start(t, "", withYAML(integrityRetries))

			g.up.Script(tc.first, fakeupstream.Reply{})
			t0 := time.Now()
			resp := restStream(t, g, "up/gpt-4o", "")
			require.Equal(t, http.StatusOK, resp.StatusCode)
			text, done, incomplete := sseText(t, sseEvents(t, resp))
			require.GreaterOrEqual(t, time.Since(t0), tc.wait, "REST: the upstream's wait was honoured")
			require.Equal(t, "Hello from the fake upstream!", text, "REST: one answer, nothing sent twice")
			require.True(t, done)
			require.False(t, incomplete)
			require.Equal(t, 2, g.up.Count(), "REST: retried on the same target")

			g.up.Script(tc.first, fakeupstream.Reply{})
			text, err, hdr := grpcStreamText(t, g, "up/gpt-4o", nil)
			require.NoError(t, err, "gRPC")
			require.Equal(t, "Hello from the fake upstream!", text, "gRPC")
			require.Equal(t, []string{"up/gpt-4o"}, hdr.Get("x-switchyard-target"))
			require.Equal(t, 4, g.up.Count(), "gRPC: retried on the same target")
		})
	}
}

// TestStreamRetryAfterIsKeptWhenNotRetried: a 429 whose Retry-After Switchyard
// cannot honour (beyond max_backoff) is not retried, so the client keeps the
// upstream's Retry-After and is not told to stop retrying; spent retries are
// final (x-should-retry: false).
func TestStreamRetryAfterIsKeptWhenNotRetried(t *testing.T) {
	t.Parallel()
	g := start(t, "", withYAML(fastRetries))
	long := fakeupstream.Reply{Status: 429, Header: map[string]string{"Retry-After": "60"}}
	for _, stream := range []bool{true, false} {
		g.up.Script(long)
		body := chatBody + `}`
		if stream {
			body = chatBody + `,"stream":true}`
		}
		before := g.up.Count()
		resp := post(t, g.base+"/chat/completions", body)
		_, _ = io.Copy(io.Discard, resp.Body)
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		require.Equal(t, "60", resp.Header.Get("Retry-After"), "stream=%v", stream)
		require.Empty(t, resp.Header.Get("X-Should-Retry"), "no retry was spent")
		require.Equal(t, 1, g.up.Count()-before)
	}

	g.up.Script(long)
	_, err, _ := grpcStreamText(t, g, "up/gpt-4o", nil)
	require.Equal(t, codes.ResourceExhausted, status.Code(err))
	var ri *errdetails.RetryInfo
	for _, d := range status.Convert(err).Details() {
		if r, ok := d.(*errdetails.RetryInfo); ok {
			ri = r
		}
	}
	require.NotNil(t, ri, "gRPC carries the upstream's wait")
	require.Equal(t, time.Minute, ri.GetRetryDelay().AsDuration())

	// Spent retries: final.
	busy := fakeupstream.Reply{Status: 503}
	g.up.Script(busy, busy, busy, busy)
	before := g.up.Count()
	resp := restStream(t, g, "up/gpt-4o", "")
	_, _ = io.Copy(io.Discard, resp.Body)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, 4, g.up.Count()-before, "the stream ran the whole retry sequence")
	require.Equal(t, "false", resp.Header.Get("X-Should-Retry"))
}

// TestStreamFailsOverBeforeTheFirstByte: a 500 (not retried, like a unary call)
// and a reset that outlives the retries move the stream to the backup.
func TestStreamFailsOverBeforeTheFirstByte(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		replies []fakeupstream.Reply
	}{
		{"500 once", []fakeupstream.Reply{{Status: 500}}},
		{"resets past the retries", []fakeupstream.Reply{{Reset: true}, {Reset: true}}},
		{"in-band errors past the retries", []fakeupstream.Reply{{Events: []string{`{"error":{"message":"boom"}}`}}, {Events: []string{`{"error":{"message":"boom"}}`}}}},
		// OpenRouter's shape: an error beside a choice finished with "error" (it was a
		// 200 stream with nothing in it, and no failover).
		{"error chunks with choices past the retries", []fakeupstream.Reply{{Events: []string{errorChunk}}, {Events: []string{errorChunk}}}},
		{"choices finished with error past the retries", []fakeupstream.Reply{{Events: []string{finishedWithError}}, {Events: []string{finishedWithError}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, backup := integrityChain(t, "", "resilience:\n  retry:\n    max_retries: 1\n    initial_backoff: 1ms\n")
			g.up.Script(tc.replies...)
			resp := restStream(t, g, "resilient-chat", "")
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Equal(t, "backup/gpt-4o-mini", resp.Header.Get("X-Switchyard-Target"))
			text, done, _ := sseText(t, sseEvents(t, resp))
			require.Equal(t, "Hello from the backup!", text)
			require.True(t, done)
			require.Equal(t, len(tc.replies), g.up.Count())

			g.up.Script(tc.replies...)
			text, err, hdr := grpcStreamText(t, g, "resilient-chat", nil)
			require.NoError(t, err)
			require.Equal(t, "Hello from the backup!", text)
			require.Equal(t, []string{"backup/gpt-4o-mini"}, hdr.Get("x-switchyard-target"))
			require.Equal(t, 2, backup.Count())
		})
	}
}

// TestBrokenStreamsOpenTheBreakerAndTheBackupServes: streams that break after
// their first byte (cut, stall, malformed chunk, in-band error) are failures of
// their target: each client gets the explicit error (REST in-band, gRPC status),
// and after failure_threshold of them the target's breaker opens and the backup
// answers.
func TestBrokenStreamsOpenTheBreakerAndTheBackupServes(t *testing.T) {
	t.Parallel()
	head := `{"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"Hello "},"finish_reason":null}]}`
	cases := []struct {
		name  string
		reply fakeupstream.Reply
	}{
		{"cut after 2 chunks", fakeupstream.Reply{CutAfter: 2}},
		{"stall past stream_idle_timeout", fakeupstream.Reply{StallAfter: 2, Stall: time.Minute}},
		{"malformed chunk", fakeupstream.Reply{Events: []string{head, `{"choices":[{"index":"zero"}]}`}}},
		{"in-band error after the first event", fakeupstream.Reply{Events: []string{head, `{"error":{"message":"overloaded"}}`}}},
		{"[DONE] without a finish", fakeupstream.Reply{Events: []string{head, "[DONE]"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, backup := integrityChain(t, "  stream_idle_timeout: 300ms\n",
				"resilience:\n  retry:\n    max_retries: 1\n    initial_backoff: 1ms\n  circuit_breaker:\n    failure_threshold: 3\n    timeout: 1h\n")
			g.up.SetDefault(tc.reply)
			for i, surface := range []string{"rest", "grpc", "rest"} {
				if surface == "rest" {
					resp := restStream(t, g, "resilient-chat", "")
					require.Equal(t, http.StatusOK, resp.StatusCode, "the first byte was out")
					require.Equal(t, "up/gpt-4o", resp.Header.Get("X-Switchyard-Target"))
					text, done, incomplete := sseText(t, sseEvents(t, resp))
					require.True(t, incomplete, "stream %d ends with the explicit error", i)
					require.False(t, done)
					require.True(t, strings.HasPrefix(text, "Hello"), "what arrived was relayed: %q", text)
				} else {
					_, err, hdr := grpcStreamText(t, g, "resilient-chat", nil)
					require.Equal(t, codes.Unavailable, status.Code(err), "stream %d: %v", i, err)
					require.Equal(t, []string{"up/gpt-4o"}, hdr.Get("x-switchyard-target"))
				}
				if i < 2 {
					require.Equal(t, int32(i+1), upBreaker(t, g).GetConsecutiveFailures(), "stream %d counted", i)
				}
			}
			require.Equal(t, adminpb.BreakerState_BREAKER_STATE_OPEN, upBreaker(t, g).GetState())
			require.Equal(t, 3, g.up.Count(), "nothing was re-sent after a first byte")

			resp := restStream(t, g, "resilient-chat", "")
			require.Equal(t, "backup/gpt-4o-mini", resp.Header.Get("X-Switchyard-Target"))
			text, done, _ := sseText(t, sseEvents(t, resp))
			require.True(t, done)
			require.Equal(t, "Hello from the backup!", text)
			text, err, _ := grpcStreamText(t, g, "resilient-chat", nil)
			require.NoError(t, err)
			require.Equal(t, "Hello from the backup!", text)
			require.Equal(t, 3, g.up.Count(), "the open target was routed around")
			require.Equal(t, 2, backup.Count())
		})
	}
}

// TestStreamWithTwoChoicesNeedsBothFinishes: with n = 2, a stream in which only
// one choice finished is incomplete on both surfaces; with both it is complete.
func TestStreamWithTwoChoicesNeedsBothFinishes(t *testing.T) {
	t.Parallel()
	ev := func(index int, content, finish string) string {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		return fmt.Sprintf(`{"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":%d,"delta":{"content":%q},"finish_reason":%s}]}`, index, content, f)
	}
	oneFinish := []string{ev(0, "a", ""), ev(1, "b", ""), ev(0, "", "stop"), "[DONE]"}
	both := []string{ev(0, "a", ""), ev(1, "b", ""), ev(0, "", "stop"), ev(1, "", "stop"), "[DONE]"}
	g := start(t, "", withYAML(noRetries))
	two := func(r *pb.ChatCompletionRequest) { n := int32(2); r.N = &n }

	g.up.Script(fakeupstream.Reply{Events: oneFinish})
	_, done, incomplete := sseText(t, sseEvents(t, restStream(t, g, "up/gpt-4o", `,"n":2`)))
	require.True(t, incomplete, "REST: one of two choices finished")
	require.False(t, done)
	g.up.Script(fakeupstream.Reply{Events: oneFinish})
	_, err, _ := grpcStreamText(t, g, "up/gpt-4o", two)
	require.Equal(t, codes.Unavailable, status.Code(err), "gRPC: one of two choices finished")
	require.Contains(t, status.Convert(err).Message(), "finish_reason")

	g.up.Script(fakeupstream.Reply{Events: both})
	text, done, incomplete := sseText(t, sseEvents(t, restStream(t, g, "up/gpt-4o", `,"n":2`)))
	require.True(t, done, "REST: both finished")
	require.False(t, incomplete)
	require.Equal(t, "ab", text)
	g.up.Script(fakeupstream.Reply{Events: both})
	text, err, _ = grpcStreamText(t, g, "up/gpt-4o", two)
	require.NoError(t, err, "gRPC: both finished")
	require.Equal(t, "ab", text)
}

// TestContextOverflowFailsOver: a 400 saying the context window was exceeded
// moves to the backup by default (it may have a larger window), unary and stream,
// on both surfaces; a content-policy 400 does not.
func TestContextOverflowFailsOver(t *testing.T) {
	t.Parallel()
	overflow := fakeupstream.Reply{Status: 400, Body: `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`}
	byMessage := fakeupstream.Reply{Status: 400, Body: `{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","param":null,"code":null}}`}
	policy := fakeupstream.Reply{Status: 400, Body: `{"error":{"message":"Your request was rejected as a result of our safety system.","type":"invalid_request_error","param":null,"code":"content_policy_violation"}}`}
	g, backup := integrityChain(t, "", noRetries)
	for _, reply := range []fakeupstream.Reply{overflow, byMessage} {
		for _, stream := range []bool{false, true} {
			g.up.Script(reply)
			body := strings.Replace(chatBody, "up/gpt-4o", "resilient-chat", 1)
			if stream {
				body += `,"stream":true`
			}
			resp := post(t, g.base+"/chat/completions", body+`}`)
			_, _ = io.Copy(io.Discard, resp.Body)
			require.Equal(t, http.StatusOK, resp.StatusCode, "stream=%v", stream)
			require.Equal(t, "backup/gpt-4o-mini", resp.Header.Get("X-Switchyard-Target"))
		}
		g.up.Script(reply)
		text, err, _ := grpcStreamText(t, g, "resilient-chat", nil)
		require.NoError(t, err)
		require.Equal(t, "Hello from the backup!", text)
		g.up.Script(reply)
		req := grpcReq()
		req.Model = "resilient-chat"
		_, err = pb.NewChatServiceClient(g.conn).CreateChatCompletion(context.Background(), req)
		require.NoError(t, err)
	}
	require.Equal(t, 8, backup.Count())

	g.up.Script(policy)
	resp := restStream(t, g, "resilient-chat", "")
	e := readError(t, resp)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Equal(t, "content_policy_violation", *e.Error.Code)
	g.up.Script(policy)
	_, err, _ := grpcStreamText(t, g, "resilient-chat", nil)
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.Equal(t, 8, backup.Count(), "a refusal is not routed around")
}

// A stream that broke after its finish chunk (every choice finished) is
// complete, as SPEC says: the client gets the whole answer and [DONE], the
// request is a success, not a WARN; before, it got stream_incomplete. Through
// the OpenAI SDK too, whose stream helper then gives the final completion.
func TestAResetAfterTheFinishChunkIsComplete(t *testing.T) {
	t.Parallel()
	g := start(t, "")
	head := `{"id":"x","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":`
	reply := fakeupstream.Reply{Events: []string{head + `"a"}}]}`, head + `"b"},"finish_reason":"stop"}]}`, "[DONE]"}, CutAfter: 2}
	g.up.Script(reply)
	events := sseEvents(t, post(t, g.base+"/chat/completions", chatBody+`,"stream":true}`))
	require.Equal(t, "[DONE]", events[len(events)-1], "%q", events)
	for _, e := range events {
		require.NotContains(t, e, "stream_incomplete")
	}
	g.up.Script(reply)
	s := sdk(g, "k").Chat.Completions.NewStreaming(context.Background(), userMsg("hi"))
	var text strings.Builder
	for s.Next() {
		for _, c := range s.Current().Choices {
			text.WriteString(c.Delta.Content)
		}
	}
	require.NoError(t, s.Err())
	require.Equal(t, "ab", text.String())
	require.NotContains(t, g.logs.String(), `"level":"WARN","msg":"request"`)
	require.Equal(t, 2, strings.Count(g.logs.String(), `"msg":"request",`), "both requests logged")
	require.Equal(t, 2, strings.Count(g.logs.String(), `"code":"OK","status":200`), "both a success")
}

// errorChunk is OpenRouter's mid-stream error: an error member beside a choice
// finished with "error"; finishedWithError is the choice alone.
const (
	errorChunk = `{"id":"gen-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o",` +
		`"error":{"code":502,"message":"Provider disconnected"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}`
	finishedWithError = `{"id":"gen-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o",` +
		`"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}`
)

// TestAnErrorChunkMidStreamEndsItIncomplete: after the first content, an error
// chunk with choices (or a choice finished with "error") ends the stream with
// the explicit error, on both surfaces: REST's stream_incomplete and no [DONE],
// gRPC's error status. Before, it was relayed and the stream ended as complete.
func TestAnErrorChunkMidStreamEndsItIncomplete(t *testing.T) {
	t.Parallel()
	head := `{"id":"gen-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":`
	events := func(last string) []string {
		return []string{head + `{"role":"assistant","content":""},"finish_reason":null}]}`,
			head + `{"content":"Hello"},"finish_reason":null}]}`, last, "[DONE]"}
	}
	for _, tc := range []struct{ name, chunk string }{{"an error chunk with choices", errorChunk}, {"a choice finished with error", finishedWithError}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := start(t, "")
			g.up.Script(fakeupstream.Reply{Events: events(tc.chunk)})
			text, done, incomplete := sseText(t, sseEvents(t, restStream(t, g, "up/gpt-4o", "")))
			require.Equal(t, "Hello", text)
			require.False(t, done, "no [DONE]")
			require.True(t, incomplete, "stream_incomplete")

			g.up.Script(fakeupstream.Reply{Events: events(tc.chunk)})
			text, err, _ := grpcStreamText(t, g, "up/gpt-4o", nil)
			require.Equal(t, "Hello", text)
			require.Error(t, err, "the gRPC stream ends with an error status")
		})
	}
}

// TestAChoiceWithNoAnswerIsAnEmptyResponse: a non-stream 200 whose choices carry
// no message, or only a role, and no finish_reason is an empty answer (502
// empty_response, failed over), on both surfaces, as a stream with nothing but a
// role chunk is. Before, it was a 200. An empty text with its finish, and text
// without a finish, stay answers.
func TestAChoiceWithNoAnswerIsAnEmptyResponse(t *testing.T) {
	t.Parallel()
	head := `{"id":"x","object":"chat.completion","created":1,"model":"gpt-4o","usage":{"prompt_tokens":1,"completion_tokens":0,"total_tokens":1},"choices":[`
	for _, tc := range []struct {
		name, choices string
		answers       bool
	}{
		{"an empty choice", `{}`, false},
		{"a null message", `{"index":0,"message":null}`, false},
		{"a role alone", `{"index":0,"message":{"role":"assistant"}}`, false},
		{"a role and empty text", `{"index":0,"message":{"role":"assistant","content":""}}`, false},
		{"empty text with its finish", `{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"stop"}`, true},
		{"text without a finish", `{"index":0,"message":{"role":"assistant","content":"hi"}}`, true},
		{"a tool call without a finish", `{"index":0,"message":{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, _ := integrityChain(t, "", "resilience:\n  retry:\n    max_retries: 0\n")
			g.up.SetDefault(fakeupstream.Reply{Body: head + tc.choices + `]}`})
			resp := post(t, g.base+"/chat/completions", chatBody+`}`)
			if tc.answers {
				require.Equal(t, http.StatusOK, resp.StatusCode)
			} else {
				require.Equal(t, http.StatusBadGateway, resp.StatusCode)
				var e errorBody
				require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
				require.Equal(t, "empty_response", *e.Error.Code)
			}
			want := "up/gpt-4o"
			if !tc.answers {
				want = "backup/gpt-4o-mini"
			}
			resp = post(t, g.base+"/chat/completions", strings.Replace(chatBody, "up/gpt-4o", "resilient-chat", 1)+`}`)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Equal(t, want, resp.Header.Get("X-Switchyard-Target"), "through the chain")

			_, err := pb.NewChatServiceClient(g.conn).CreateChatCompletion(context.Background(), grpcReq())
			if tc.answers {
				require.NoError(t, err)
			} else {
				require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
			}
		})
	}
}
