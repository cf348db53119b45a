package resilience

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// endingClock is a fakeClock whose Sleep ends the caller's context instead of
// waiting, as a client cancelling (or a deadline passing) mid-backoff would.
type endingClock struct {
	*fakeClock
	end func()
}

func (c endingClock) Sleep(ctx context.Context, d time.Duration) error {
	c.end()
	return c.fakeClock.Sleep(ctx, d)
}

// deadlineCtx is a context with a far deadline whose Err turns to DeadlineExceeded
// when expire is called: the deadline passing during a wait, without real time.
type deadlineCtx struct {
	context.Context
	dl   time.Time
	once sync.Once
	done chan struct{}
}

func newDeadlineCtx(dl time.Time) *deadlineCtx {
	return &deadlineCtx{Context: context.Background(), dl: dl, done: make(chan struct{})}
}

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.dl, true }
func (c *deadlineCtx) Done() <-chan struct{}       { return c.done }
func (c *deadlineCtx) expire()                     { c.once.Do(func() { close(c.done) }) }
func (c *deadlineCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// TestContextEndingTheSequenceIsNeitherFailureNorSpent: a client that cancels (or
// whose deadline passes) between attempts gets the context's error, not the last
// upstream error as a spent sequence, and the breaker records nothing.
func TestContextEndingTheSequenceIsNeitherFailureNorSpent(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// setup returns the context and a function ending it; endInCall ends it in
		// the attempt (after the upstream answered) instead of during the wait.
		setup     func(c *fakeClock) (context.Context, func())
		endInCall bool
		want      error
	}{
		{"cancelled during the backoff wait", cancelSetup, false, context.Canceled},
		{"deadline passes during the backoff wait", deadlineSetup, false, context.DeadlineExceeded},
		{"cancelled after a retryable answer, before the wait", cancelSetup, true, context.Canceled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fc := newFakeClock()
			ctx, end := tc.setup(fc)
			var clock Clock = fc
			if !tc.endInCall {
				clock = endingClock{fakeClock: fc, end: end}
			}
			br := DefaultBreaker()
			br.FailureThreshold = 1 // any recorded failure would open it
			g := NewGuard(GuardConfig{Provider: "p", Retry: DefaultRetry(), Breaker: br, Clock: clock,
				Rand: func() float64 { return 0 }})
			calls := 0
			err := g.Call(ctx, "m", func(context.Context, int) error {
				calls++
				if tc.endInCall {
					end()
				}
				return status(503)
			})
			require.Equal(t, 1, calls, "no attempt after the context ended")
			require.ErrorIs(t, err, tc.want)
			require.NotErrorIs(t, err, ErrRetriesExhausted, "not a spent sequence: no x-should-retry: false")
			var ue upstreamErr
			require.False(t, errors.As(err, &ue), "the upstream error is not what the caller sees")
			var ie *InterruptedError
			require.True(t, errors.As(err, &ie))
			require.Equal(t, 1, ie.Attempts)
			require.Equal(t, status(503), ie.Last)
			s := g.breakers.shared.Snapshot()
			require.Equal(t, Closed, s.State, "neither a failure ...")
			require.Zero(t, s.ConsecutiveFailures)
		})
	}
}

func cancelSetup(*fakeClock) (context.Context, func()) {
	return context.WithCancel(context.Background())
}

func deadlineSetup(c *fakeClock) (context.Context, func()) {
	ctx := newDeadlineCtx(c.Now().Add(time.Hour))
	return ctx, ctx.expire
}

// TestInterruptedSequenceKeepsTheCount: a cancelled sequence is not a success either.
func TestInterruptedSequenceKeepsTheCount(t *testing.T) {
	t.Parallel()
	fc := newFakeClock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := NewGuard(GuardConfig{Provider: "p", Retry: DefaultRetry(), Breaker: DefaultBreaker(),
		Clock: endingClock{fakeClock: fc, end: cancel}, Rand: func() float64 { return 0 }})
	for range 4 {
		_ = g.Call(context.Background(), "m", func(context.Context, int) error { return status(500) })
	}
	require.Equal(t, 4, g.breakers.shared.Snapshot().ConsecutiveFailures)
	err := g.Call(ctx, "m", func(context.Context, int) error { return status(503) })
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 4, g.breakers.shared.Snapshot().ConsecutiveFailures, "not reset as a success, not counted as a failure")
}

// TestInterruptedProbeFreesTheSlot: a probe whose client cancels leaves the breaker
// half-open with the next call as its probe.
func TestInterruptedProbeFreesTheSlot(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	g := breakerGuard(c, nil)
	for range 5 {
		_ = fail(g, "m", status(503))
	}
	c.Advance(30 * time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, g.Call(ctx, "m", func(ctx context.Context, _ int) error { return ctx.Err() }), context.Canceled)
	require.Equal(t, HalfOpen, state(g, "m"))
	require.NoError(t, ok(g, "m"), "the next call is the probe")
}
