package openai_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/fakeupstream"
	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/providers/openai"
)

func newClient(t *testing.T, up *fakeupstream.Server, idle time.Duration) *openai.Client {
	t.Helper()
	c := openai.New(openai.Config{Name: "up", BaseURL: up.URL, APIKey: "sk", ConnectTimeout: time.Second,
		Timeout: 5 * time.Second, StreamIdleTimeout: idle})
	t.Cleanup(c.Close)
	return c
}

func request() *providers.Request {
	return &providers.Request{Attempt: providers.Attempt{Model: "gpt-4o"}, Body: &pb.ChatCompletionRequest{Model: "up/gpt-4o",
		Messages: []*pb.ChatMessage{{Role: "user", Content: structpb.NewStringValue("hi")}}}}
}

func providerError(t *testing.T, err error) *providers.Error {
	t.Helper()
	var pe *providers.Error
	require.True(t, errors.As(err, &pe), "%v", err)
	return pe
}

func TestChatErrors(t *testing.T) {
	t.Parallel()
	up := fakeupstream.New()
	defer up.Close()
	c := newClient(t, up, 0)
	cases := []struct {
		name    string
		reply   fakeupstream.Reply
		status  int
		message string
		retry   time.Duration
	}{
		{"429 with retry-after seconds", fakeupstream.Reply{Status: 429, Header: map[string]string{"Retry-After": "2"}}, 429, "fake upstream error 429", 2 * time.Second},
		{"503 with retry-after-ms", fakeupstream.Reply{Status: 503, Header: map[string]string{"retry-after-ms": "250"}}, 503, "", 250 * time.Millisecond},
		{"hidden error, numeric code", fakeupstream.Reply{Body: `{"error":{"message":"Rate limit exceeded","code":429}}`}, 429, "Rate limit exceeded", 0},
		{"hidden error, numeric string code", fakeupstream.Reply{Body: `{"error":{"message":"busy","code":"503"}}`}, 503, "busy", 0},
		{"hidden error, other code", fakeupstream.Reply{Body: `{"error":{"message":"boom","code":"internal"}}`}, 502, "boom", 0},
		{"empty choices", fakeupstream.Reply{Body: `{"id":"x","object":"chat.completion","choices":[]}`}, 502, "provider returned no choices", 0},
		{"unreadable", fakeupstream.Reply{Body: `<html>oops</html>`}, 502, "", 0},
		{"html error page", fakeupstream.Reply{Status: 502, Body: `<html>bad gateway</html>`}, 502, "provider up returned 502 Bad Gateway", 0},
	}
	for _, tc := range cases { // one after another: they share the scripted upstream
		t.Run(tc.name, func(t *testing.T) {
			up.Script(tc.reply)
			_, err := c.Chat(context.Background(), request())
			pe := providerError(t, err)
			require.Equal(t, tc.status, pe.Status)
			if tc.message != "" {
				require.Equal(t, tc.message, pe.Message)
			}
			require.Equal(t, tc.retry, pe.RetryAfter)
		})
	}
}

func TestChatTransportErrors(t *testing.T) {
	t.Parallel()
	up := fakeupstream.New()
	c := newClient(t, up, 0)
	up.Script(fakeupstream.Reply{Reset: true})
	_, err := c.Chat(context.Background(), request())
	require.True(t, providerError(t, err).Transport, "a reset is a transport error")
	up.Close()
	_, err = c.Chat(context.Background(), request())
	pe := providerError(t, err)
	require.True(t, pe.Transport, "refused is a transport error")
	require.Equal(t, http.StatusBadGateway, pe.Status)
}

func TestChatLocalTimeoutIsNotATransportError(t *testing.T) {
	t.Parallel()
	up := fakeupstream.New()
	defer up.Close()
	c := openai.New(openai.Config{Name: "up", BaseURL: up.URL, Timeout: 50 * time.Millisecond})
	up.Script(fakeupstream.Reply{Delay: time.Second})
	_, err := c.Chat(context.Background(), request())
	pe := providerError(t, err)
	require.True(t, pe.Timeout)
	require.False(t, pe.Transport)
	require.Equal(t, http.StatusGatewayTimeout, pe.Status)

	ctx, cancel := context.WithCancel(context.Background())
	up.Script(fakeupstream.Reply{Delay: time.Second})
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err = c.Chat(ctx, request())
	require.ErrorIs(t, err, context.Canceled, "a client cancellation stays a cancellation")
}

func TestUpstreamBodyLeavesTheRequestUntouched(t *testing.T) {
	t.Parallel()
	up := fakeupstream.New()
	defer up.Close()
	c := newClient(t, up, 0)
	req := request()
	req.Body.Stream = true
	req.IdempotencyKey = "idem-1"
	_, err := c.Chat(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, "up/gpt-4o", req.Body.GetModel())
	require.True(t, req.Body.GetStream())
	got := up.Requests()[0]
	require.Equal(t, "gpt-4o", got.JSON()["model"])
	require.Equal(t, false, got.JSON()["stream"])
	require.Equal(t, "idem-1", got.Header.Get("Idempotency-Key"))
}

func collect(t *testing.T, s providers.Stream) (string, error) {
	t.Helper()
	var b strings.Builder
	for {
		c, err := s.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return b.String(), nil
			}
			return b.String(), err
		}
		for _, ch := range c.GetChoices() {
			b.WriteString(ch.GetDelta().GetContent())
		}
	}
}

func TestStreamFraming(t *testing.T) {
	t.Parallel()
	up := fakeupstream.New()
	defer up.Close()
	c := newClient(t, up, 0)
	head := `{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":`
	cases := []struct {
		name   string
		events []string
		text   string
		err    error
	}{
		{"complete", []string{head + `"a"}}]}`, head + `"b"},"finish_reason":"stop"}]}`, "[DONE]"}, "ab", nil},
		{"finish then close without DONE", []string{head + `"a"},"finish_reason":"stop"}]}`}, "a", nil},
		{"DONE without finish_reason", []string{head + `"a"}}]}`, "[DONE]"}, "a", providers.ErrStreamIncomplete},
		{"closed before final event", []string{head + `"a"}}]}`}, "a", providers.ErrStreamIncomplete},
		{"malformed chunk", []string{head + `"a"}}]}`, `{"choices":[{"index":"zero"}]}`}, "a", providers.ErrStreamIncomplete},
		{"error mid-stream", []string{head + `"a"}}]}`, `{"error":{"message":"overloaded"}}`}, "a", providers.ErrStreamIncomplete},
	}
	for _, tc := range cases { // one after another: they share the scripted upstream
		t.Run(tc.name, func(t *testing.T) {
			up.Script(fakeupstream.Reply{Events: tc.events})
			s, err := c.Stream(context.Background(), request())
			require.NoError(t, err)
			text, err := collect(t, s)
			require.Equal(t, tc.text, text)
			if tc.err == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tc.err)
			}
		})
	}
}

func TestStreamIdleTimeoutCountsOnlyAfterTheFirstByte(t *testing.T) {
	t.Parallel()
	up := fakeupstream.New()
	defer up.Close()
	c := newClient(t, up, 100*time.Millisecond)
	// A slow first byte (longer than the idle timeout) is fine.
	up.Script(fakeupstream.Reply{Delay: 200 * time.Millisecond, Text: "slow start"})
	s, err := c.Stream(context.Background(), request())
	require.NoError(t, err)
	text, err := collect(t, s)
	require.NoError(t, err)
	require.Equal(t, "slow start", text)
	// A stall after the first event ends the stream as incomplete.
	up.Script(fakeupstream.Reply{Text: "one two three", StallAfter: 2, Stall: 5 * time.Second})
	s, err = c.Stream(context.Background(), request())
	require.NoError(t, err)
	text, err = collect(t, s)
	require.ErrorIs(t, err, providers.ErrStreamIncomplete)
	require.Contains(t, err.Error(), "no data from the provider")
	require.Equal(t, "one ", text)
}

func TestRetryAfterParsing(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			out.Set(kv[i], kv[i+1])
		}
		return out
	}
	require.Equal(t, 3*time.Second, providers.RetryAfter(h("Retry-After", "3"), now))
	require.Equal(t, 1500*time.Millisecond, providers.RetryAfter(h("Retry-After", "1.5"), now))
	require.Equal(t, 10*time.Second, providers.RetryAfter(h("Retry-After", now.Add(10*time.Second).Format(http.TimeFormat)), now))
	require.Equal(t, 120*time.Millisecond, providers.RetryAfter(h("retry-after-ms", "120", "Retry-After", "9"), now))
	require.Zero(t, providers.RetryAfter(h("Retry-After", "soon"), now))
	require.Zero(t, providers.RetryAfter(h(), now))
}

func TestPendingSeesOnlyWholeBufferedEvents(t *testing.T) {
	t.Parallel()
	up := fakeupstream.New()
	defer up.Close()
	c := newClient(t, up, 0)
	head := `{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"a"}`
	up.Script(fakeupstream.Reply{Burst: true, Events: []string{head + `}]}`, head + `,"finish_reason":"stop"}]}`, "[DONE]"}})
	s, err := c.Stream(context.Background(), request())
	require.NoError(t, err)
	p := s.(providers.Pender)
	require.True(t, p.Pending(), "the first event is held")
	_, err = s.Recv()
	require.NoError(t, err)
	require.True(t, p.Pending(), "the rest of the burst arrived with the first event")
	_, err = collect(t, s)
	require.NoError(t, err)
	require.False(t, p.Pending())
}

func TestUpstreamErrorsNeverEchoTheKey(t *testing.T) {
	t.Parallel()
	up := fakeupstream.New()
	defer up.Close()
	c := openai.New(openai.Config{Name: "up", BaseURL: up.URL, APIKey: "sk-secret-123456"})
	defer c.Close()
	up.Script(fakeupstream.Reply{Status: 401, Body: `{"error":{"message":"Incorrect API key provided: sk-secret-123456","type":"invalid_request_error","code":"invalid_api_key"}}`})
	_, err := c.Chat(context.Background(), request())
	require.Error(t, err)
	require.NotContains(t, err.Error(), "sk-secret-123456")
	require.Contains(t, err.Error(), "[redacted]")
}
