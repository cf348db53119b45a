package resilience

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func retryGuard(c *fakeClock, mutate func(*RetrySettings)) *Guard {
	r := DefaultRetry()
	if mutate != nil {
		mutate(&r)
	}
	b := DefaultBreaker()
	b.Enabled = false
	return NewGuard(GuardConfig{Provider: "p", Retry: r, Breaker: b, Clock: c, Rand: func() float64 { return 0 }})
}

func TestBackoffIsExponentialCappedAndJittered(t *testing.T) {
	t.Parallel()
	s := DefaultRetry()
	require.Equal(t, time.Second, s.Backoff(0, 0))
	require.Equal(t, 2*time.Second, s.Backoff(1, 0))
	require.Equal(t, 4*time.Second, s.Backoff(2, 0))
	require.Equal(t, 30*time.Second, s.Backoff(10, 0), "capped at max_backoff")
	for _, r := range []float64{0, 0.25, 0.5, 0.999} {
		d := s.Backoff(1, r)
		require.GreaterOrEqual(t, d, 2*time.Second)
		require.LessOrEqual(t, d, 2*time.Second+200*time.Millisecond, "jitter is at most jitter_factor of the wait")
	}
	require.Equal(t, 30*time.Second, s.Backoff(10, 0.9), "jitter never exceeds max_backoff")
}

func TestWhatIsRetried(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		err   error
		calls int
	}{
		{"429", status(429), 4}, {"502", status(502), 4}, {"503", status(503), 4}, {"504", status(504), 4},
		{"522", status(522), 4}, {"524", status(524), 4}, {"529 (Anthropic overloaded)", status(529), 4},
		{"500 is not retried", status(500), 1}, {"400", status(400), 1}, {"401", status(401), 1},
		{"402", status(402), 1}, {"403", status(403), 1}, {"404", status(404), 1},
		{"transport", upstreamErr{transport: true}, 4},
		{"local timeout ends at once", upstreamErr{timeout: true}, 1},
		{"cancelled", context.Canceled, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newFakeClock()
			call, n := script(tc.err, tc.err, tc.err, tc.err, tc.err)
			err := retryGuard(c, nil).Call(context.Background(), "m", call)
			require.Error(t, err)
			require.Equal(t, tc.calls, *n)
			if tc.calls == 4 {
				require.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}, c.Sleeps())
				require.ErrorIs(t, err, ErrRetriesExhausted)
			}
		})
	}
}

func TestRetrySucceedsAfterFailures(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	call, n := script(status(503), upstreamErr{transport: true})
	require.NoError(t, retryGuard(c, nil).Call(context.Background(), "m", call))
	require.Equal(t, 3, *n)
}

func TestRetryStatusOverrides(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	g := retryGuard(c, func(r *RetrySettings) { r.RetryOnStatuses = MustStatusSet("5xx") })
	call, n := script(status(500), status(500))
	require.NoError(t, g.Call(context.Background(), "m", call))
	require.Equal(t, 3, *n, "5xx includes 500")

	g = retryGuard(c, func(r *RetrySettings) { r.RetryOnStatuses = MustStatusSet() })
	call, n = script(status(503))
	require.Error(t, g.Call(context.Background(), "m", call))
	require.Equal(t, 1, *n, "[] disables status retries")
	call, n = script(upstreamErr{transport: true})
	require.NoError(t, g.Call(context.Background(), "m", call))
	require.Equal(t, 2, *n, "but keeps transport retries")

	g = retryGuard(c, func(r *RetrySettings) { r.MaxRetries = 0 })
	call, n = script(status(503))
	require.Error(t, g.Call(context.Background(), "m", call))
	require.Equal(t, 1, *n, "max_retries 0 = exactly one attempt")
}

func TestRetryAfterIsHonoured(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	call, n := script(upstreamErr{status: 429, retryAfter: 5 * time.Second})
	require.NoError(t, retryGuard(c, nil).Call(context.Background(), "m", call))
	require.Equal(t, 2, *n)
	require.Equal(t, []time.Duration{5 * time.Second}, c.Sleeps(), "wait = max(backoff, Retry-After)")

	c = newFakeClock()
	call, n = script(upstreamErr{status: 503, retryAfter: 100 * time.Millisecond})
	require.NoError(t, retryGuard(c, nil).Call(context.Background(), "m", call))
	require.Equal(t, []time.Duration{time.Second}, c.Sleeps(), "never shorter than the backoff")

	c = newFakeClock()
	call, n = script(upstreamErr{status: 429, retryAfter: time.Minute})
	err := retryGuard(c, nil).Call(context.Background(), "m", call)
	require.Equal(t, 1, *n, "asked to wait longer than max_backoff: give up at once")
	require.Empty(t, c.Sleeps())
	var ue upstreamErr
	require.True(t, errors.As(err, &ue))
	require.Equal(t, 429, ue.status, "the upstream's status goes on")
}

func TestDeadlineBoundsTheSequence(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	ctx, cancel := context.WithDeadline(context.Background(), c.Now().Add(2500*time.Millisecond))
	defer cancel()
	call, n := script(status(503), status(503), status(503), status(503))
	err := retryGuard(c, nil).Call(ctx, "m", call)
	require.Error(t, err)
	require.Equal(t, 2, *n, "1s wait fits, the 2s one would pass the deadline")
	require.Equal(t, []time.Duration{time.Second}, c.Sleeps())
}

func TestRetryBudget(t *testing.T) {
	t.Parallel()
	b := NewBudget(20, 3)
	for range 10 {
		b.enter()
	}
	require.True(t, b.acquire())
	require.True(t, b.acquire())
	require.True(t, b.acquire(), "the floor allows 3 concurrent retries")
	require.False(t, b.acquire(), "20% of 10 in flight is 2, the floor is 3")
	for range 20 {
		b.enter()
	}
	require.True(t, b.acquire(), "20% of 30 in flight is 6")
	b.release()
	var nilBudget *Budget
	require.True(t, nilBudget.acquire())
}

func TestBudgetDeniedRetryReturnsAtOnce(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	g := retryGuard(c, nil)
	g.budget = NewBudget(0, 0)
	call, n := script(status(503), status(503))
	require.Error(t, g.Call(context.Background(), "m", call))
	require.Equal(t, 1, *n)
}

// CallOnce sends a call once whatever the retry settings, and the breaker still
// counts it: a retryable status is one attempt and one breaker failure.
func TestCallOnceNeverRetries(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	b := DefaultBreaker()
	b.FailureThreshold = 1
	g := NewGuard(GuardConfig{Provider: "p", Retry: DefaultRetry(), Breaker: b, Clock: c})
	attempts := 0
	err := g.CallOnce(context.Background(), "", func(context.Context, int) error { attempts++; return status(503) })
	require.Error(t, err)
	require.Equal(t, 1, attempts, "no retry, though 503 is retryable")
	require.Equal(t, Open, state(g, ""), "the failure reached the breaker")
}
