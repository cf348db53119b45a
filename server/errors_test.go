package server

import (
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/status"

	"github.com/switchyard/switchyard/providers"
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
