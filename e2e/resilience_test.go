package e2e

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/fakeupstream"
)

// fastRetries keeps the default policy's shape with millisecond waits.
const fastRetries = `resilience:
  retry:
    initial_backoff: 1ms
    max_backoff: 50ms
`

func TestRetriesReachTheSameTargetWithTheSameIdempotencyKey(t *testing.T) {
	t.Parallel()
	g := start(t, "", withYAML(fastRetries))
	g.up.Script(fakeupstream.Reply{Status: 503}, fakeupstream.Reply{Reset: true}, fakeupstream.Reply{})
	resp, err := sdk(g, "k").Chat.Completions.New(context.Background(), userMsg("hi"),
		option.WithHeader("Idempotency-Key", "idem-42"))
	require.NoError(t, err)
	require.Equal(t, "Hello from the fake upstream!", resp.Choices[0].Message.Content)
	reqs := g.up.Requests()
	require.Len(t, reqs, 3, "503, reset, then success")
	for _, r := range reqs {
		require.Equal(t, "idem-42", r.Header.Get("Idempotency-Key"))
	}

	g.up.Script(fakeupstream.Reply{Status: 503}, fakeupstream.Reply{})
	_, err = sdk(g, "k").Chat.Completions.New(context.Background(), userMsg("hi"),
		option.WithHeader("Idempotency-Key", "bad key with spaces"))
	require.NoError(t, err)
	for _, r := range g.up.Requests()[3:] {
		require.Empty(t, r.Header.Get("Idempotency-Key"), "invalid keys are ignored")
	}
}

func TestRetryOutcomesOverGRPCAndREST(t *testing.T) {
	t.Parallel()
	g := start(t, "", withYAML(fastRetries))
	chat := pb.NewChatServiceClient(g.conn)
	cases := []struct {
		name     string
		replies  []fakeupstream.Reply
		attempts int
		status   int
		code     codes.Code
		final    bool
	}{
		{"500 is not retried", []fakeupstream.Reply{{Status: 500}}, 1, 500, codes.Internal, false},
		{"400 is not retried", []fakeupstream.Reply{{Status: 400}}, 1, 400, codes.InvalidArgument, false},
		{"exhausted 503", []fakeupstream.Reply{{Status: 503}, {Status: 503}, {Status: 503}, {Status: 503}}, 4, 503, codes.Unavailable, true},
		// No retry was spent: the client is not told to stop (it keeps Retry-After).
		{"Retry-After beyond max_backoff gives up at once", []fakeupstream.Reply{{Status: 429, Header: map[string]string{"Retry-After": "60"}}}, 1, 429, codes.ResourceExhausted, false},
		{"hidden 429 in a 200 is retried", []fakeupstream.Reply{{Body: `{"error":{"message":"slow down","code":429}}`}, {}}, 2, 200, codes.OK, false},
	}
	for _, tc := range cases { // one after another: each counts the upstream's requests before and after
		t.Run(tc.name, func(t *testing.T) {
			// REST
			before := g.up.Count()
			g.up.Script(tc.replies...)
			resp := post(t, g.base+"/chat/completions", chatBody+`}`)
			_, _ = io.Copy(io.Discard, resp.Body)
			require.Equal(t, tc.status, resp.StatusCode, "REST "+tc.name)
			require.Equal(t, tc.attempts, g.up.Count()-before, "REST "+tc.name)
			if tc.final {
				require.Equal(t, "false", resp.Header.Get("X-Should-Retry"), "REST "+tc.name)
			} else {
				require.Empty(t, resp.Header.Get("X-Should-Retry"), "REST "+tc.name)
			}
			// gRPC
			before = g.up.Count()
			g.up.Script(tc.replies...)
			_, err := chat.CreateChatCompletion(context.Background(), grpcReq())
			require.Equal(t, tc.code, status.Code(err), "gRPC "+tc.name)
			require.Equal(t, tc.attempts, g.up.Count()-before, "gRPC "+tc.name)
		})
	}
}

// TestStreamsAreRetriedBeforeTheirFirstByte: nothing reached the client yet, so
// the stream is retried like a unary call (see stream_integrity_test.go).
func TestStreamsAreRetriedBeforeTheirFirstByte(t *testing.T) {
	t.Parallel()
	g := start(t, "", withYAML(fastRetries))
	g.up.Script(fakeupstream.Reply{Status: 503}, fakeupstream.Reply{})
	resp := post(t, g.base+"/chat/completions", chatBody+`,"stream":true}`)
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, 2, g.up.Count())
}

const breakerYAML = `resilience:
  retry:
    max_retries: 0
  circuit_breaker:
    failure_threshold: 2
    timeout: 1h
`

func TestOpenBreakerFailsFastOnBothSurfaces(t *testing.T) {
	t.Parallel()
	g := start(t, "", withYAML(breakerYAML))
	g.up.SetDefault(fakeupstream.Reply{Status: 502})
	c := sdk(g, "k")
	for range 2 {
		_, err := c.Chat.Completions.New(context.Background(), userMsg("hi"))
		require.Error(t, err)
	}
	require.Equal(t, 2, g.up.Count())

	resp := post(t, g.base+"/chat/completions", chatBody+`}`)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	e := readError(t, resp)
	require.Equal(t, "circuit breaker is open - provider up temporarily unavailable", e.Error.Message)
	require.Equal(t, "circuit_breaker_open", *e.Error.Code)
	require.Equal(t, "3600", resp.Header.Get("Retry-After"))
	ms, err := strconv.Atoi(resp.Header.Get("Retry-After-Ms"))
	require.NoError(t, err)
	require.InDelta(t, 3600000, ms, 10000, "the time until the breaker probes again")

	_, err = c.Chat.Completions.New(context.Background(), userMsg("hi"))
	var apiErr *openai.Error
	require.True(t, errors.As(err, &apiErr))
	require.Equal(t, 503, apiErr.StatusCode)

	_, err = pb.NewChatServiceClient(g.conn).CreateChatCompletion(context.Background(), grpcReq())
	require.Equal(t, codes.Unavailable, status.Code(err))
	require.Equal(t, "circuit_breaker_open", reasonOf(err))
	require.Equal(t, 2, g.up.Count(), "an open breaker never touches the upstream")
}
