package openai_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/fakeupstream"
	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/providers/openai"
)

// Upstreams Switchyard cannot trust: what they send is their fault, never the
// client's, and never gets past the bounds Switchyard sets.

const chunkHead = `{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":`

// deep is a JSON value nested depth arrays deep.
func deep(depth int) string { return strings.Repeat("[", depth) + strings.Repeat("]", depth) }

// huge is a JSON object one byte past openai.MaxResponseBytes.
func huge() string {
	return `{"x":"` + strings.Repeat("a", openai.MaxResponseBytes-7) + `"}`
}

func requireUnreadable(t *testing.T, err error) {
	t.Helper()
	pe := providerError(t, err)
	require.Equal(t, http.StatusBadGateway, pe.Status)
	require.Equal(t, http.StatusBadGateway, pe.UpstreamStatus(), "a failure to retries and breakers")
	require.Equal(t, providers.KindUnreadable, pe.Kind)
	require.Contains(t, pe.Error(), "provider up ")
	require.NotContains(t, pe.Error(), "request body", "never blames the client's request")
}

func TestUnreadableAnswersAreTheProvidersFault(t *testing.T) {
	t.Parallel()
	up := fakeupstream.New()
	defer up.Close()
	c := newClient(t, up, 0)
	completion := `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"a"},"finish_reason":"stop"}]`
	cases := []struct {
		name string
		body string
	}{
		{"not JSON", "Service temporarily unavailable"},
		{"truncated", completion},
		{"4M-deep unknown member (8 MB)", completion + `,"x":` + deep(4_000_000) + `}`},
		{"wrong type", `{"id":"x","choices":"none"}`},
		{"larger than MaxResponseBytes", huge()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up.Script(fakeupstream.Reply{Body: tc.body})
			_, err := c.Chat(context.Background(), request())
			requireUnreadable(t, err)
		})
	}
}

func TestUnreadableFirstStreamEventIsAFailedAttempt(t *testing.T) {
	t.Parallel()
	up := fakeupstream.New()
	defer up.Close()
	c := newClient(t, up, 0)
	cases := []struct {
		name  string
		event string
	}{
		{"not JSON", "<html>"},
		{"4M-deep unknown member", `{"id":"x","x":` + deep(4_000_000) + `}`},
		{"wrong type", `{"id":"x","choices":[{"index":"zero"}]}`},
		{"larger than MaxResponseBytes", huge()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up.Script(fakeupstream.Reply{Events: []string{tc.event, "[DONE]"}})
			s, err := c.Stream(context.Background(), request())
			require.Nil(t, s)
			requireUnreadable(t, err)
		})
	}
}

// A chunk that does not decode ends the stream as incomplete, on both ways of
// reading it (Recv for gRPC, NextRaw for the REST relay): it is never passed on,
// in part or whole.
func TestUnreadableChunkEndsTheStream(t *testing.T) {
	t.Parallel()
	up := fakeupstream.New()
	defer up.Close()
	c := newClient(t, up, 0)
	cases := []struct {
		name  string
		event string
	}{
		{"not JSON", "{oops"},
		{"1M-deep unknown member", chunkHead + `"b"}}],"x":` + deep(1_000_000) + `}`},
		{"deep member missing nothing", chunkHead + `"b"}}],"object":"chat.completion.chunk","x":` + deep(100_000) + `}`},
		{"wrong type among complete members", chunkHead + `"b"}}],"usage":{"prompt_tokens":"many"}}`},
		{"larger than MaxResponseBytes", huge()},
	}
	reads := map[string]func(providers.Stream) (int, error){
		"Recv": func(s providers.Stream) (int, error) {
			n := 0
			for {
				if _, err := s.Recv(); err != nil {
					return n, err
				}
				n++
			}
		},
		"NextRaw": func(s providers.Stream) (int, error) {
			n := 0
			for {
				if _, err := s.(providers.RawStream).NextRaw(); err != nil {
					return n, err
				}
				n++
			}
		},
	}
	for _, tc := range cases {
		for how, read := range reads {
			t.Run(tc.name+"/"+how, func(t *testing.T) {
				up.Script(fakeupstream.Reply{Events: []string{chunkHead + `"a"}}]}`, tc.event,
					chunkHead + `"c"},"finish_reason":"stop"}]}`, "[DONE]"}})
				s, err := c.Stream(context.Background(), request())
				require.NoError(t, err)
				defer s.Close()
				n, err := read(s)
				require.Equal(t, 1, n, "only the chunk before the bad one is passed on")
				var se *providers.StreamError
				require.True(t, errors.As(err, &se), "%v", err)
				require.Equal(t, providers.StreamMalformedChunk, se.Kind)
				require.Contains(t, se.Error(), "provider up ")
				require.NotContains(t, se.Error(), "request body")
			})
		}
	}
}

func TestUpstreamAuthFailureIsTheGatewaysNotTheClients(t *testing.T) {
	t.Parallel()
	up := fakeupstream.New()
	defer up.Close()
	var logs bytes.Buffer
	c := openai.New(openai.Config{Name: "up", BaseURL: up.URL, APIKey: "sk-upstream-key-123",
		Log: slog.New(slog.NewJSONHandler(&logs, nil))})
	defer c.Close()
	for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			body := `{"error":{"message":"Incorrect API key provided: sk-upstream-key-123","type":"invalid_request_error","param":"key","code":"invalid_api_key"}}`
			for _, stream := range []bool{false, true} {
				logs.Reset()
				up.Script(fakeupstream.Reply{Status: status, Body: body})
				var err error
				if stream {
					_, err = c.Stream(context.Background(), request())
				} else {
					_, err = c.Chat(context.Background(), request())
				}
				pe := providerError(t, err)
				require.Equal(t, http.StatusBadGateway, pe.Status, "the client sees 502")
				require.Equal(t, status, pe.UpstreamStatus(), "retries see the upstream's status: not retried")
				require.Equal(t, providers.KindUpstreamAuth, pe.Kind)
				require.Equal(t, "server_error", pe.Type)
				require.Equal(t, "upstream_authentication_failed", pe.Code)
				require.Empty(t, pe.Param)
				require.Contains(t, pe.Message, "provider up refused Switchyard's credentials")
				require.NotContains(t, pe.Message, "sk-upstream-key-123")
				require.Contains(t, logs.String(), `"level":"ERROR"`)
				require.Contains(t, logs.String(), `"provider":"up"`)
				require.NotContains(t, logs.String(), "sk-upstream-key-123")
			}
		})
	}
}

// Every string a client can see of an upstream error (message, type, code,
// param) is cleared of every secret: the API key, configured header values and
// the base URL's password.
func TestUpstreamErrorsNeverEchoSecrets(t *testing.T) {
	t.Parallel()
	up := fakeupstream.New()
	defer up.Close()
	const key, header, password = "sk-upstream-key-123", "azure-header-secret", "url-pass-secret"
	base := strings.Replace(up.URL, "http://", "http://user:"+password+"@", 1)
	c := openai.New(openai.Config{Name: "up", BaseURL: base, APIKey: key, Headers: map[string]string{"api-key": header}})
	defer c.Close()
	fields := []string{"message", "type", "code", "param"}
	for _, secret := range []string{key, header, password} {
		for _, field := range fields {
			body := map[string]string{"message": "m", "type": "t", "code": "c", "param": "p"}
			body[field] = "x=" + secret
			errJSON := `{"message":"` + body["message"] + `","type":"` + body["type"] + `","code":"` + body["code"] +
				`","param":"` + body["param"] + `"}`
			t.Run(field+"/"+secret, func(t *testing.T) {
				check := func(t *testing.T, err error) {
					t.Helper()
					pe := providerError(t, err)
					for _, s := range []string{pe.Message, pe.Type, pe.Code, pe.Param, pe.Error()} {
						require.NotContains(t, s, secret)
					}
					require.Contains(t, pe.Message+pe.Type+pe.Code+pe.Param, "x=[redacted]")
				}
				up.Script(fakeupstream.Reply{Status: 400, Body: `{"error":` + errJSON + `}`})
				_, err := c.Chat(context.Background(), request())
				check(t, err)
				up.Script(fakeupstream.Reply{Body: `{"error":` + errJSON + `}`}) // hidden in a 200
				_, err = c.Chat(context.Background(), request())
				check(t, err)
				up.Script(fakeupstream.Reply{Events: []string{`{"error":` + errJSON + `}`}}) // as the first event
				_, err = c.Stream(context.Background(), request())
				check(t, err)
			})
		}
		t.Run("mid-stream/"+secret, func(t *testing.T) {
			up.Script(fakeupstream.Reply{Events: []string{chunkHead + `"a"}}]}`, `{"error":{"message":"x=` + secret + `"}}`}})
			s, err := c.Stream(context.Background(), request())
			require.NoError(t, err)
			_, err = collect(t, s)
			require.ErrorIs(t, err, providers.ErrStreamIncomplete)
			require.NotContains(t, err.Error(), secret)
			require.Contains(t, err.Error(), "x=[redacted]")
		})
	}
}

// TestStreamFirstTokenTimeout: first_token_timeout bounds the wait from the
// request to the first event with content; headers, or a role-only chunk, then
// silence is a first-token timeout (a local timeout the retry policy retries).
func TestStreamFirstTokenTimeout(t *testing.T) {
	t.Parallel()
	up := fakeupstream.New()
	defer up.Close()
	c := openai.New(openai.Config{Name: "up", BaseURL: up.URL, FirstTokenTimeout: 300 * time.Millisecond,
		StreamIdleTimeout: time.Hour})
	defer c.Close()
	cases := []struct {
		name  string
		reply fakeupstream.Reply
	}{
		{"headers then nothing", fakeupstream.Reply{HeadersOnly: true}},
		{"no headers", fakeupstream.Reply{Delay: 10 * time.Second}},
		{"a role-only chunk then nothing", fakeupstream.Reply{StallAfter: 1, Stall: 10 * time.Second}},
		{"role-only chunks then nothing", fakeupstream.Reply{StallAfter: 2, Stall: 10 * time.Second,
			Events: []string{roleChunk, roleChunk, textChunk("late"), "[DONE]"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up.Script(tc.reply)
			start := time.Now()
			_, err := c.Stream(context.Background(), request())
			require.Less(t, time.Since(start), 5*time.Second, "bounded by the first-token timeout, not the caller")
			pe := providerError(t, err)
			require.True(t, pe.LocalTimeout(), "a local timeout: a breaker failure")
			require.True(t, pe.FirstTokenTimeout(), "a first-token timeout: retried")
			require.False(t, pe.TransportFailure())
			require.Equal(t, http.StatusGatewayTimeout, pe.Status, "failover-eligible 5xx")
			require.Contains(t, pe.Message, "provider up sent no content within 300ms (first_token_timeout)")
		})
	}
	t.Run("a role-only chunk is held and delivered before the first content", func(t *testing.T) {
		up.Script(fakeupstream.Reply{Text: "one two", StallAfter: 1, Stall: 100 * time.Millisecond})
		s, err := c.Stream(context.Background(), request())
		require.NoError(t, err)
		first, err := s.Recv()
		require.NoError(t, err)
		require.Equal(t, "assistant", first.GetChoices()[0].GetDelta().GetRole(), "the role chunk comes first")
		text, err := collect(t, s)
		require.NoError(t, err)
		require.Equal(t, "one two", text)
	})
	t.Run("reasoning counts as content", func(t *testing.T) {
		up.Script(fakeupstream.Reply{StallAfter: 2, Stall: 10 * time.Second,
			Events: []string{roleChunk, reasoningChunk, textChunk("late"), "[DONE]"}})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		s, err := c.Stream(ctx, request())
		require.NoError(t, err, "the reasoning chunk ends the wait")
		s.Close()
	})
	t.Run("a first token in time is not affected", func(t *testing.T) {
		// The first content comes at once, then the stream is silent for twice
		// the first-token timeout: the timeout ended with that content. (Tokens
		// 150 ms apart left -race on a loaded machine too little margin.)
		up.Script(fakeupstream.Reply{Text: "one two three", StallAfter: 2, Stall: 600 * time.Millisecond})
		s, err := c.Stream(context.Background(), request())
		require.NoError(t, err)
		text, err := collect(t, s)
		require.NoError(t, err, "the timeout ends with the first content")
		require.Equal(t, "one two three", text)
	})
	t.Run("a caller's cancellation stays a cancellation", func(t *testing.T) {
		up.Script(fakeupstream.Reply{HeadersOnly: true})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		_, err := c.Stream(ctx, request())
		var pe *providers.Error
		require.False(t, errors.As(err, &pe), "%v", err)
		require.True(t, errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled), "%v", err)
	})
}

const ftHead = `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,`

var (
	roleChunk      = ftHead + `"delta":{"role":"assistant","content":""},"finish_reason":null}]}`
	reasoningChunk = ftHead + `"delta":{"reasoning_content":"thinking"},"finish_reason":null}]}`
)

func textChunk(text string) string {
	return ftHead + `"delta":{"content":"` + text + `"},"finish_reason":"stop"}]}`
}

func TestErrorBodiesAreReadOnlyInPart(t *testing.T) {
	t.Parallel()
	up := fakeupstream.New()
	defer up.Close()
	c := newClient(t, up, 0)
	up.Script(fakeupstream.Reply{Status: 500, Body: huge()})
	_, err := c.Chat(context.Background(), request())
	pe := providerError(t, err)
	require.Equal(t, 500, pe.Status)
	require.Equal(t, "provider up returned 500 Internal Server Error", pe.Message)
}

func TestStreamResetBeforeHeadersIsATransportError(t *testing.T) {
	t.Parallel()
	up := fakeupstream.New()
	defer up.Close()
	c := newClient(t, up, 0)
	up.Script(fakeupstream.Reply{Reset: true})
	_, err := c.Stream(context.Background(), request())
	pe := providerError(t, err)
	require.True(t, pe.Transport, "a reset is a transport error, never a cancellation")
}
