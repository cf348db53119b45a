package resilience

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const maxDuration = time.Duration(math.MaxInt64)

// TestBackoffSaturates: factor^n and jitter never overflow into a negative or
// zero wait; the wait stays within [0, max_backoff].
func TestBackoffSaturates(t *testing.T) {
	t.Parallel()
	def := DefaultRetry()
	cases := []struct {
		name   string
		mutate func(*RetrySettings)
		n      int
		r      float64
		want   time.Duration
	}{
		{"defaults, retry 100", nil, 100, 0, 30 * time.Second},
		{"defaults, retry 2000 (factor^n is +Inf)", nil, 2000, 0.999, 30 * time.Second},
		{"max_backoff the largest duration, retry 100", func(s *RetrySettings) { s.MaxBackoff = maxDuration }, 100, 0, maxDuration},
		{"max_backoff the largest duration, with jitter", func(s *RetrySettings) { s.MaxBackoff = maxDuration }, 62, 0.9, maxDuration},
		{"max_backoff the largest duration, early retries are exact", func(s *RetrySettings) { s.MaxBackoff = maxDuration }, 3, 0, 8 * time.Second},
		{"huge initial backoff", func(s *RetrySettings) { s.InitialBackoff = maxDuration; s.MaxBackoff = maxDuration }, 1, 0.5, maxDuration},
		{"initial 0 with factor^n +Inf (0 × Inf is NaN)", func(s *RetrySettings) { s.InitialBackoff = 0 }, 2000, 0.5, 0},
		{"max_backoff 0", func(s *RetrySettings) { s.MaxBackoff = 0 }, 5, 0.5, 0},
		{"jitter factor 1 at the cap", func(s *RetrySettings) { s.JitterFactor = 1 }, 4, 0.999, 30 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := def
			if tc.mutate != nil {
				tc.mutate(&s)
			}
			got := s.Backoff(tc.n, tc.r)
			require.Equal(t, tc.want, got)
			require.GreaterOrEqual(t, got, time.Duration(0))
			require.LessOrEqual(t, got, max(s.MaxBackoff, 0))
		})
	}
}

// TestManyRetriesNeverWaitNegative runs a long sequence against the largest
// max_backoff: every wait grows or stays, none wraps around.
func TestManyRetriesNeverWaitNegative(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	g := retryGuard(c, func(r *RetrySettings) { r.MaxRetries = 80; r.MaxBackoff = maxDuration })
	errs := make([]error, 81)
	for i := range errs {
		errs[i] = status(503)
	}
	call, n := script(errs...)
	require.ErrorIs(t, g.Call(context.Background(), "m", call), ErrRetriesExhausted)
	require.Equal(t, 81, *n)
	prev := time.Duration(0)
	for i, d := range c.Sleeps() {
		require.GreaterOrEqual(t, d, prev, "wait %d", i)
		prev = d
	}
	require.Equal(t, maxDuration, prev)
}

// TestRetryAfterBeyondMaxBackoffEndsTheSequence: any hint longer than max_backoff,
// the saturated largest duration included, ends the sequence at once with the
// upstream's status; a hint of exactly max_backoff is waited.
func TestRetryAfterBeyondMaxBackoffEndsTheSequence(t *testing.T) {
	t.Parallel()
	maxB := DefaultRetry().MaxBackoff
	cases := []struct {
		name   string
		status int
		hint   time.Duration
		calls  int
		sleeps []time.Duration
	}{
		{"saturated hint on 429", 429, maxDuration, 1, nil},
		{"saturated hint on 503", 503, maxDuration, 1, nil},
		{"one nanosecond over", 429, maxB + 1, 1, nil},
		{"exactly max_backoff is waited", 429, maxB, 2, []time.Duration{maxB}},
		{"a negative hint is no hint", 429, -time.Second, 2, []time.Duration{time.Second}},
		{"not honoured on 502", 502, maxDuration, 2, []time.Duration{time.Second}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newFakeClock()
			call, n := script(upstreamErr{status: tc.status, retryAfter: tc.hint})
			err := retryGuard(c, nil).Call(context.Background(), "m", call)
			require.Equal(t, tc.calls, *n)
			require.Equal(t, tc.sleeps, c.Sleeps())
			if tc.calls == 1 {
				var ue upstreamErr
				require.True(t, errors.As(err, &ue))
				require.Equal(t, tc.status, ue.status, "the upstream's status goes on")
			} else {
				require.NoError(t, err)
			}
		})
	}
}

// TestTripForTheLargestDuration: an admin trip for the largest duration keeps the
// breaker open with a positive Retry-After instead of wrapping into the past.
func TestTripForTheLargestDuration(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	g := breakerGuard(c, nil)
	g.breakers.shared.Trip(maxDuration)
	c.Advance(1000 * time.Hour)
	err := ok(g, "m")
	var oe *OpenError
	require.True(t, errors.As(err, &oe))
	require.Positive(t, oe.RetryAfter)
}
