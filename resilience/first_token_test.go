package resilience

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// firstTokenErr is a test Outcome for a stream's first-token timeout.
type firstTokenErr struct{ upstreamErr }

func (firstTokenErr) FirstTokenTimeout() bool { return true }

// TestFirstTokenTimeoutIsRetried: a stream's first-token timeout is a local
// timeout that the retry policy retries (the upstream never started its answer),
// while any other local timeout (a whole non-stream attempt) is not; both count
// for the breaker.
func TestFirstTokenTimeoutIsRetried(t *testing.T) {
	t.Parallel()
	ft := firstTokenErr{upstreamErr{timeout: true}}
	cases := []struct {
		name     string
		errs     []error
		calls    int
		ok       bool
		failures int
	}{
		{"first-token timeout, then content", []error{ft}, 2, true, 0},
		{"first-token timeouts exhaust the retries", []error{ft, ft, ft, ft}, 4, false, 1},
		{"another local timeout is not retried", []error{upstreamErr{timeout: true}}, 1, false, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newFakeClock()
			call, n := script(tc.errs...)
			g := NewGuard(GuardConfig{Provider: "p", Retry: DefaultRetry(), Breaker: DefaultBreaker(), Clock: c,
				Rand: func() float64 { return 0 }})
			finish, err := g.Stream(context.Background(), "m", call)
			require.Equal(t, tc.calls, *n)
			if tc.ok {
				require.NoError(t, err)
				finish(nil)
			} else {
				require.Error(t, err)
				require.Equal(t, tc.calls > 1, errorsIsExhausted(err), "spent retries are final")
			}
			require.Equal(t, tc.failures, g.Breakers().List()[0].ConsecutiveFailures, "breaker failures")
			require.Len(t, c.Sleeps(), tc.calls-1)
			for _, d := range c.Sleeps() {
				require.Greater(t, d, time.Duration(0))
			}
		})
	}
}
