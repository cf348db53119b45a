package server

import (
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/status"

	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/router"
)

// An upstream's Retry-After reaches the client as it was, up to a day.
func TestRetryAfterPassedOnIsCapped(t *testing.T) {
	cases := []struct {
		name      string
		upstream  time.Duration
		wantMilli string
	}{
		{"ordinary", 3 * time.Second, "3000"},
		{"a day", 24 * time.Hour, "86400000"},
		{"saturated by a hostile upstream", providers.MaxRetryAfter, "86400000"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := toStatus(slog.New(slog.DiscardHandler), &providers.Error{Provider: "up", Status: http.StatusTooManyRequests,
				Message: "slow down", RetryAfter: tc.upstream})
			e := fromStatus(status.Convert(err))
			require.Equal(t, http.StatusTooManyRequests, e.HTTPStatus)
			require.Equal(t, tc.wantMilli, e.RetryAfterMS)
		})
	}
}

// A request whose every target is at its provider account's own limits gets
// OpenAI's 429 with a wait, not a 5xx.
func TestSaturatedTargetsAre429(t *testing.T) {
	cases := []struct {
		name, limit, wantType, wantMilli string
		after                            time.Duration
	}{
		{"requests", "requests", "requests", "2000", 2 * time.Second},
		{"tokens", "tokens", "tokens", "1000", 0},
		{"concurrency", "concurrency", "requests", "1000", 10 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := toStatus(slog.New(slog.DiscardHandler), &router.SaturatedError{Provider: "up", Model: "m", Limit: tc.limit, RetryAfter: tc.after})
			e := fromStatus(status.Convert(err))
			require.Equal(t, http.StatusTooManyRequests, e.HTTPStatus)
			require.Equal(t, tc.wantType, e.Type)
			require.Equal(t, "rate_limit_exceeded", e.Code)
			require.Equal(t, tc.wantMilli, e.RetryAfterMS)
		})
	}
}
