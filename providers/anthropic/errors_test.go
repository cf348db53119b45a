package anthropic_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/fakeupstream"
	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/providers/anthropic"
	"github.com/switchyard/switchyard/resilience"
	"github.com/switchyard/switchyard/router"
)

// calls are the four ways to reach Anthropic; each must map errors alike.
var calls = []struct {
	name string
	do   func(c *anthropic.Client) error
}{
	{"chat", func(c *anthropic.Client) error { _, err := c.Chat(ctx, chatRequest()); return err }},
	{"stream", func(c *anthropic.Client) error {
		s, err := c.Stream(ctx, chatRequest())
		if err == nil {
			s.Close()
		}
		return err
	}},
	{"messages", func(c *anthropic.Client) error {
		_, err := c.Messages(ctx, providers.Attempt{Model: "m"}, []byte(nativeBody))
		return err
	}},
	{"stream messages", func(c *anthropic.Client) error {
		s, err := c.StreamMessages(ctx, providers.Attempt{Model: "m"}, []byte(`{"model":"x","stream":true}`))
		if err == nil {
			s.Close()
		}
		return err
	}},
}

// TestErrorStatuses: Anthropic's error body becomes a *providers.Error with the
// upstream's status, Code and Type its error type, its message, retry-after kept;
// a refused key is Switchyard's problem (502, out of service); bodies that are not
// Anthropic's keep a readable message.
func TestErrorStatuses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		reply    fakeupstream.Reply
		status   int
		answered int
		code     string
		message  string
		retry    time.Duration
	}{
		{"529 overloaded with retry-after", fakeupstream.Reply{Status: 529, Header: map[string]string{"retry-after": "7"},
			Body: fakeupstream.AnthropicErrorBody("overloaded_error", "Overloaded")}, 529, 0, "overloaded_error", "Overloaded", 7 * time.Second},
		{"429 rate limit with retry-after", fakeupstream.Reply{Status: 429, Header: map[string]string{"retry-after": "2"}}, 429, 0,
			"rate_limit_error", "fake upstream error 429", 2 * time.Second},
		{"400 invalid request", fakeupstream.Reply{Status: 400, Body: fakeupstream.AnthropicErrorBody("invalid_request_error", "max_tokens: Field required")},
			400, 0, "invalid_request_error", "max_tokens: Field required", 0},
		{"500 api error", fakeupstream.Reply{Status: 500}, 500, 0, "api_error", "fake upstream error 500", 0},
		{"401 refused key", fakeupstream.Reply{Status: 401, Body: fakeupstream.AnthropicErrorBody("authentication_error", "invalid x-api-key")},
			502, 401, "upstream_authentication_failed", "", 0},
		{"html error page", fakeupstream.Reply{Status: 502, Body: "<html>bad gateway</html>"}, 502, 0, "", "provider claude returned 502 Bad Gateway", 0},
		{"echoed key is redacted", fakeupstream.Reply{Status: 400, Body: fakeupstream.AnthropicErrorBody("invalid_request_error", "bad key "+key)},
			400, 0, "invalid_request_error", "bad key [redacted]", 0},
	}
	for _, tc := range cases {
		for _, call := range calls {
			t.Run(tc.name+"/"+call.name, func(t *testing.T) {
				t.Parallel()
				up := newFake(t)
				c := newClient(t, up)
				up.Script(tc.reply)
				pe := providerError(t, call.do(c))
				require.Equal(t, tc.status, pe.Status)
				require.Equal(t, tc.code, pe.Code)
				if tc.answered != 0 {
					require.Equal(t, tc.answered, pe.UpstreamStatus())
					require.True(t, pe.OutOfService())
					require.Contains(t, pe.Message, "claude")
				}
				if tc.message != "" {
					require.Equal(t, tc.message, pe.Message)
				}
				require.Equal(t, tc.retry, pe.RetryAfter)
				require.NotContains(t, pe.Message+pe.Type+pe.Code+pe.Param, key)
			})
		}
	}
}

// TestOverloadedIsFailoverEligible: 529 (overloaded_error) is a 5xx: it fails
// over by default and counts against the breaker, wherever it arrives.
func TestOverloadedIsFailoverEligible(t *testing.T) {
	t.Parallel()
	require.True(t, router.DefaultFailover().Statuses.Has(529), "failover-eligible")
	require.True(t, resilience.DefaultBreaker().FailureOnStatuses.Has(529), "a breaker failure")

	up := newFake(t)
	c := newClient(t, up)
	up.Script(fakeupstream.Reply{Events: []string{fakeupstream.AnthropicErrorEvent("overloaded_error", "Overloaded")}})
	_, err := c.Stream(ctx, chatRequest())
	pe := providerError(t, err)
	require.Equal(t, 529, pe.UpstreamStatus(), "an in-band overloaded_error is judged as the 529 it is")
	require.Equal(t, providers.KindHiddenError, pe.Kind)
}

// TestHiddenErrorInA200: an error body answered with 200 is the error it reports.
func TestHiddenErrorInA200(t *testing.T) {
	t.Parallel()
	for _, call := range calls[:3:3] {
		if call.name == "stream" {
			continue
		}
		t.Run(call.name, func(t *testing.T) {
			t.Parallel()
			up := newFake(t)
			c := newClient(t, up)
			up.Script(fakeupstream.Reply{Body: fakeupstream.AnthropicErrorBody("overloaded_error", "Overloaded")})
			pe := providerError(t, call.do(c))
			require.Equal(t, 529, pe.Status)
			require.Equal(t, "overloaded_error", pe.Code)
			require.Equal(t, providers.KindHiddenError, pe.Kind)
		})
	}
}

// TestUnreadableAnswers: what does not decode, or is past MaxResponseBytes, is the
// provider's fault (502 unreadable).
func TestUnreadableAnswers(t *testing.T) {
	t.Parallel()
	huge := `{"x":"` + strings.Repeat("a", providers.MaxResponseBytes) + `"}`
	cases := []struct {
		name  string
		reply fakeupstream.Reply
		calls []string
	}{
		{"not JSON", fakeupstream.Reply{Body: "<html>oops</html>"}, []string{"chat", "messages"}},
		{"larger than MaxResponseBytes", fakeupstream.Reply{Body: huge}, []string{"chat", "messages"}},
		{"a stream event larger than MaxResponseBytes", fakeupstream.Reply{Events: []string{"event: message_start\ndata: " + huge}},
			[]string{"stream", "stream messages"}},
	}
	for _, tc := range cases {
		for _, call := range calls {
			if !contains(tc.calls, call.name) {
				continue
			}
			t.Run(tc.name+"/"+call.name, func(t *testing.T) {
				up := newFake(t)
				c := newClient(t, up)
				up.Script(tc.reply)
				pe := providerError(t, call.do(c))
				require.Equal(t, http.StatusBadGateway, pe.Status)
				require.Equal(t, providers.KindUnreadable, pe.Kind)
			})
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestTimeouts: the attempt timeout (non-stream), the first-token deadline (headers
// and then nothing, or a role-only start and then nothing) and the idle timer
// (silent after the first content).
func TestTimeouts(t *testing.T) {
	t.Parallel()
	const model = "claude-sonnet-4-20250514"
	full := fakeupstream.AnthropicStream("msg", model, "one two")
	short := func(cfg *anthropic.Config) {
		cfg.Timeout, cfg.FirstTokenTimeout, cfg.StreamIdleTimeout = 150*time.Millisecond, 150*time.Millisecond, 150*time.Millisecond
	}
	t.Run("attempt timeout", func(t *testing.T) {
		t.Parallel()
		up := newFake(t)
		c := newClient(t, up, short)
		up.Script(fakeupstream.Reply{Delay: 5 * time.Second}, fakeupstream.Reply{Delay: 5 * time.Second})
		for _, call := range []string{"chat", "messages"} {
			var err error
			if call == "chat" {
				_, err = c.Chat(ctx, chatRequest())
			} else {
				_, err = c.Messages(ctx, providers.Attempt{Model: model}, []byte(nativeBody))
			}
			pe := providerError(t, err)
			require.Equal(t, http.StatusGatewayTimeout, pe.Status, call)
			require.True(t, pe.LocalTimeout(), call)
			require.False(t, pe.FirstTokenTimeout(), call)
		}
	})
	for _, tc := range []struct {
		name  string
		reply fakeupstream.Reply
	}{
		{"headers then nothing", fakeupstream.Reply{HeadersOnly: true}},
		{"message_start then nothing", fakeupstream.Reply{Events: full, StallAfter: 2, Stall: 5 * time.Second}},
	} {
		t.Run("first token: "+tc.name, func(t *testing.T) {
			t.Parallel()
			for _, native := range []bool{false, true} {
				up := newFake(t)
				c := newClient(t, up, short)
				up.Script(tc.reply)
				var err error
				if native {
					_, err = c.StreamMessages(ctx, providers.Attempt{Model: model}, []byte(`{"model":"x","stream":true}`))
				} else {
					_, err = c.Stream(ctx, chatRequest())
				}
				pe := providerError(t, err)
				require.True(t, pe.FirstTokenTimeout(), "native=%v: %v", native, err)
				require.Equal(t, http.StatusGatewayTimeout, pe.Status)
			}
		})
	}
	t.Run("idle after content", func(t *testing.T) {
		t.Parallel()
		for _, native := range []bool{false, true} {
			up := newFake(t)
			// Only the idle timer is short: a loaded machine must not turn this into a
			// first-token timeout.
			c := newClient(t, up, func(cfg *anthropic.Config) { cfg.StreamIdleTimeout = 150 * time.Millisecond })
			up.Script(fakeupstream.Reply{Events: full, StallAfter: 5, Stall: 5 * time.Second})
			var err error
			if native {
				s, e := c.StreamMessages(ctx, providers.Attempt{Model: model}, []byte(`{"model":"x","stream":true}`))
				require.NoError(t, e)
				_, err = readEvents(t, s)
				s.Close()
			} else {
				s, e := c.Stream(ctx, chatRequest())
				require.NoError(t, e)
				_, err = readAll(t, s)
				s.Close()
			}
			var se *providers.StreamError
			require.ErrorAs(t, err, &se, "native=%v", native)
			require.Equal(t, providers.StreamStalled, se.Kind)
		}
	})
}

// TestTransportFailure: no answer at all is a transport failure (502, retried).
func TestTransportFailure(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	c := anthropic.New(anthropic.Config{Name: "claude", BaseURL: "http://" + addr, APIKey: key})
	defer c.Close()
	for _, call := range calls {
		pe := providerError(t, call.do(c))
		require.True(t, pe.TransportFailure(), call.name)
		require.Equal(t, http.StatusBadGateway, pe.Status, call.name)
	}
	up := newFake(t)
	c2 := newClient(t, up)
	up.Script(fakeupstream.Reply{Reset: true})
	_, err = c2.Chat(ctx, chatRequest())
	require.True(t, providerError(t, err).TransportFailure())
}

// TestCallerLeaving: the caller's cancellation is its own error, no provider failure.
func TestCallerLeaving(t *testing.T) {
	t.Parallel()
	up := newFake(t)
	c := newClient(t, up)
	up.Script(fakeupstream.Reply{Delay: 5 * time.Second})
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err := c.Chat(cctx, chatRequest())
	require.ErrorIs(t, err, context.DeadlineExceeded)
}
