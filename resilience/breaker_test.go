package resilience

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func breakerGuard(c *fakeClock, mutate func(*BreakerSettings)) *Guard {
	b := DefaultBreaker()
	if mutate != nil {
		mutate(&b)
	}
	r := DefaultRetry()
	r.MaxRetries = 0
	return NewGuard(GuardConfig{Provider: "openai-eu", Retry: r, Breaker: b, Clock: c})
}

func fail(g *Guard, model string, err error) error {
	return g.Call(context.Background(), model, func(context.Context, int) error { return err })
}

func ok(g *Guard, model string) error { return fail(g, model, nil) }

func state(g *Guard, model string) State {
	b, _ := g.breakers.For(model)
	return b.Snapshot().State
}

func TestBreakerOpensAfterThresholdAndFailsFast(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	g := breakerGuard(c, nil)
	for i := range 4 {
		require.Error(t, fail(g, "m", status(503)))
		require.Equal(t, Closed, state(g, "m"), "after %d failures", i+1)
	}
	require.Error(t, fail(g, "m", status(503)))
	require.Equal(t, Open, state(g, "m"))

	called := false
	err := g.Call(context.Background(), "m", func(context.Context, int) error { called = true; return nil })
	require.False(t, called, "an open breaker never touches the upstream")
	require.ErrorIs(t, err, ErrBreakerOpen)
	var oe *OpenError
	require.True(t, errors.As(err, &oe))
	require.Equal(t, "circuit breaker is open - provider openai-eu temporarily unavailable", err.Error())
	require.Equal(t, 30*time.Second, oe.RetryAfter)
}

func TestSuccessResetsTheCount(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	g := breakerGuard(c, nil)
	for range 4 {
		_ = fail(g, "m", status(503))
	}
	require.NoError(t, ok(g, "m"))
	for range 4 {
		_ = fail(g, "m", status(503))
	}
	require.Equal(t, Closed, state(g, "m"), "failures must be consecutive")
}

func TestOneExhaustedSequenceIsOneFailure(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	b := DefaultBreaker()
	b.FailureThreshold = 2
	g := NewGuard(GuardConfig{Provider: "p", Retry: DefaultRetry(), Breaker: b, Clock: c})
	calls := 0
	_ = g.Call(context.Background(), "m", func(context.Context, int) error { calls++; return status(503) })
	require.Equal(t, 4, calls)
	require.Equal(t, Closed, state(g, "m"), "four HTTP failures, one sequence, one breaker failure")
}

func TestHalfOpenLetsExactlyOneProbe(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	g := breakerGuard(c, nil)
	for range 5 {
		_ = fail(g, "m", status(503))
	}
	c.Advance(30 * time.Second)

	probeStarted, release := make(chan struct{}), make(chan struct{})
	var probeErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		probeErr = g.Call(context.Background(), "m", func(context.Context, int) error {
			close(probeStarted)
			<-release
			return nil
		})
	}()
	<-probeStarted
	for range 10 {
		require.ErrorIs(t, ok(g, "m"), ErrBreakerOpen, "concurrent calls fail fast while the probe is out")
	}
	close(release)
	wg.Wait()
	require.NoError(t, probeErr)
	require.Equal(t, HalfOpen, state(g, "m"), "one success of two needed")
	require.NoError(t, ok(g, "m"))
	require.Equal(t, Closed, state(g, "m"), "success_threshold probe successes close it")
}

func TestProbeIsOneAttemptAndFailureReopens(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	b := DefaultBreaker()
	g := NewGuard(GuardConfig{Provider: "p", Retry: DefaultRetry(), Breaker: b, Clock: c})
	for range 5 {
		_ = g.Call(context.Background(), "m", func(context.Context, int) error { return status(500) })
	}
	require.Equal(t, Open, state(g, "m"))
	c.Advance(31 * time.Second)
	calls := 0
	_ = g.Call(context.Background(), "m", func(context.Context, int) error { calls++; return status(503) })
	require.Equal(t, 1, calls, "a probe makes one HTTP attempt, no retries")
	require.Equal(t, Open, state(g, "m"), "a failed probe re-opens it")
	require.ErrorIs(t, ok(g, "m"), ErrBreakerOpen)
}

func TestWhatCountsAsFailure(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		err      error
		statuses []string
		opens    bool
	}{
		{"5xx", status(500), nil, true},
		{"429 by default", status(429), nil, true},
		{"429 excluded by [5xx]", status(429), []string{"5xx"}, false},
		{"transport", upstreamErr{transport: true}, nil, true},
		{"local timeout", upstreamErr{timeout: true}, nil, true},
		{"400 never", status(400), nil, false},
		{"404 never", status(404), nil, false},
		{"client cancellation counts as nothing", context.Canceled, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newFakeClock()
			g := breakerGuard(c, func(b *BreakerSettings) {
				if tc.statuses != nil {
					b.FailureOnStatuses = MustStatusSet(tc.statuses...)
				}
			})
			for range 5 {
				_ = fail(g, "m", tc.err)
			}
			require.Equal(t, tc.opens, state(g, "m") == Open)
		})
	}
}

func TestCancellationKeepsTheCount(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	g := breakerGuard(c, nil)
	for range 4 {
		_ = fail(g, "m", status(503))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = g.Call(ctx, "m", func(ctx context.Context, _ int) error { return ctx.Err() })
	require.Equal(t, 4, func() int { b, _ := g.breakers.For("m"); return b.Snapshot().ConsecutiveFailures }())
}

func TestSlowCallsCountButAreReturned(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	g := breakerGuard(c, func(b *BreakerSettings) { b.SlowCallThreshold = 10 * time.Second; b.FailureThreshold = 3 })
	slow := func(context.Context, int) error { c.Advance(11 * time.Second); return nil }
	for range 3 {
		require.NoError(t, g.Call(context.Background(), "m", slow), "a slow answer is still returned")
	}
	require.Equal(t, Open, state(g, "m"))

	g = breakerGuard(c, func(b *BreakerSettings) { b.SlowCallThreshold = 10 * time.Second; b.FailureThreshold = 3 })
	for range 2 {
		_ = g.Call(context.Background(), "m", slow)
	}
	require.NoError(t, ok(g, "m"), "a fast answer in between resets the count")
	_ = g.Call(context.Background(), "m", slow)
	require.Equal(t, Closed, state(g, "m"))
}

func TestSlowCallIncludesRetries(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	b := DefaultBreaker()
	b.SlowCallThreshold = 2 * time.Second
	b.FailureThreshold = 1
	g := NewGuard(GuardConfig{Provider: "p", Retry: DefaultRetry(), Breaker: b, Clock: c, Rand: func() float64 { return 0 }})
	call, _ := script(status(503), status(503))
	require.NoError(t, g.Call(context.Background(), "m", call))
	require.Equal(t, Open, state(g, "m"), "1s + 2s of backoff made the sequence slow")
}

func TestDisabledBreaker(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		mutate func(*BreakerSettings)
	}{
		{"not enabled", func(b *BreakerSettings) { b.Enabled = false }},
		{"zero failure threshold", func(b *BreakerSettings) { b.FailureThreshold = 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newFakeClock()
			g := breakerGuard(c, tc.mutate)
			for range 20 {
				_ = fail(g, "m", status(503))
			}
			require.Equal(t, Closed, state(g, "m"))
			require.NoError(t, ok(g, "m"))
		})
	}
}

func TestScopes(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	g := breakerGuard(c, nil)
	for range 5 {
		_ = fail(g, "bad", status(503))
	}
	require.ErrorIs(t, ok(g, "good"), ErrBreakerOpen, "provider scope: one breaker for all models")

	g = breakerGuard(c, func(b *BreakerSettings) { b.Scope = ScopeModel })
	for range 5 {
		_ = fail(g, "bad", status(503))
	}
	require.ErrorIs(t, ok(g, "bad"), ErrBreakerOpen)
	require.NoError(t, ok(g, "good"), "model scope: a failing model never blocks its sibling")
	require.Len(t, g.Breakers().List(), 2)
}

func TestModelBreakerSlots(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	g := breakerGuard(c, func(b *BreakerSettings) { b.Scope = ScopeModel; b.FailureThreshold = 1 })
	g.breakers.limit = 3
	for i := range 3 {
		_ = fail(g, fmt.Sprint("m", i), status(503))
	}
	err := ok(g, "new")
	require.ErrorIs(t, err, ErrNoBreakerSlot, "every slot holds an open breaker")

	c.Advance(ModelBreakerIdle + time.Minute)
	for i := range 3 { // probes close them
		require.NoError(t, ok(g, fmt.Sprint("m", i)))
		require.NoError(t, ok(g, fmt.Sprint("m", i)))
	}
	c.Advance(ModelBreakerIdle)
	require.NoError(t, ok(g, "new"), "idle closed breakers expire")
	require.Len(t, g.Breakers().List(), 1)
}

func TestAdminResetAndTrip(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	g := breakerGuard(c, nil)
	b, _ := g.breakers.For("")
	b.Trip(time.Minute)
	require.ErrorIs(t, ok(g, "m"), ErrBreakerOpen)
	s := b.Snapshot()
	require.Equal(t, c.Now().Add(time.Minute), s.NextProbe)
	b.Reset()
	require.NoError(t, ok(g, "m"))
}

// outOfService is an upstream answer whose status the breaker would not count, but
// that says the target cannot serve anyone (its credentials were refused).
type outOfService struct{ status int }

func (o outOfService) Error() string             { return "credentials refused" }
func (o outOfService) UpstreamStatus() int       { return o.status }
func (o outOfService) TransportFailure() bool    { return false }
func (o outOfService) LocalTimeout() bool        { return false }
func (o outOfService) RetryDelay() time.Duration { return 0 }
func (o outOfService) OutOfService() bool        { return true }

// An out-of-service answer is a breaker failure even with a status outside
// failure_on_statuses, and it does not wipe the failures before it.
func TestOutOfServiceIsABreakerFailure(t *testing.T) {
	for _, status := range []int{401, 403} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			clock := newFakeClock()
			s := DefaultBreaker()
			s.FailureThreshold = 3
			b := NewBreaker(s, clock)
			for range 3 {
				p, _, ok := b.allow()
				require.True(t, ok)
				b.done(p, kindStatus, outOfService{status}, 0)
			}
			require.Equal(t, Open, b.Snapshot().State)
		})
	}
}

// TestTripAll: with breakers per model, a trip of the whole provider refuses
// every model's calls until it runs out; a model's own breaker keeps its own
// trips and resets meanwhile (an admin acting on one model does not end, cut or
// lengthen the provider's trip); once it runs out the provider's breaker is
// closed and no longer listed, as nothing else would move it on.
func TestTripAll(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	g := breakerGuard(c, func(b *BreakerSettings) { b.Scope = ScopeModel; b.Timeout = time.Minute })
	bs := g.Breakers()
	require.NoError(t, ok(g, "m1"))
	bs.TripAll(time.Hour)
	require.ErrorIs(t, ok(g, "m1"), ErrBreakerOpen)
	require.ErrorIs(t, ok(g, "m2"), ErrBreakerOpen, "a model never seen before too")
	require.Equal(t, "", bs.List()[0].Model, "the provider's trip is listed")

	own, err := bs.Own("m1")
	require.NoError(t, err)
	own.Reset() // an admin resets one model during the provider's trip
	require.ErrorIs(t, ok(g, "m2"), ErrBreakerOpen, "the provider's trip goes on")
	own.Trip(2 * time.Hour)
	c.Advance(time.Minute + time.Second)
	require.ErrorIs(t, ok(g, "m2"), ErrBreakerOpen, "a model's trip does not cut the provider's")

	c.Advance(time.Hour)
	require.NoError(t, ok(g, "m2"), "the provider's trip ran out")
	require.ErrorIs(t, ok(g, "m1"), ErrBreakerOpen, "m1's own trip outlasts it")
	for _, e := range bs.List() {
		require.NotEqual(t, "", e.Model, "the provider's breaker is closed and not listed: %+v", e)
	}
	require.Equal(t, Closed, bs.shared.Snapshot().State)

	bs.TripAll(time.Hour)
	bs.ResetAll()
	require.NoError(t, ok(g, "m2"), "a reset of the provider ends its trip")
}
