package resilience

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStreamsAreRetriedUntilTheirFirstEvent: a stream's call returns at its first
// event, so failures before it are retried like a unary call's, Retry-After and
// backoff included.
func TestStreamsAreRetriedUntilTheirFirstEvent(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		errs   []error
		calls  int
		sleeps []time.Duration
		ok     bool
	}{
		{"429 with Retry-After, then the first event", []error{upstreamErr{status: 429, retryAfter: 3 * time.Second}}, 2, []time.Duration{3 * time.Second}, true},
		{"reset before headers, then the first event", []error{upstreamErr{transport: true}}, 2, []time.Duration{time.Second}, true},
		{"an empty 200 stream (502), then the first event", []error{status(502)}, 2, []time.Duration{time.Second}, true},
		{"500 is not retried", []error{status(500)}, 1, nil, false},
		{"exhausted 503", []error{status(503), status(503), status(503), status(503)}, 4,
			[]time.Duration{time.Second, 2 * time.Second, 4 * time.Second}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newFakeClock()
			call, n := script(tc.errs...)
			finish, err := retryGuard(c, nil).Stream(context.Background(), "m", call)
			require.Equal(t, tc.calls, *n)
			require.Equal(t, tc.sleeps, c.Sleeps())
			if tc.ok {
				require.NoError(t, err)
				finish(nil)
				return
			}
			require.Error(t, err)
			require.Nil(t, finish)
			require.Equal(t, tc.calls > 1, errorsIsExhausted(err), "spent retries are final, a single attempt is not")
		})
	}
}

// TestOneUnretriedAttemptIsNotASpentSequence: x-should-retry: false only when
// retries were spent; a 429 whose Retry-After exceeds max_backoff keeps its hint.
func TestOneUnretriedAttemptIsNotASpentSequence(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	call, n := script(upstreamErr{status: 429, retryAfter: time.Hour})
	err := retryGuard(c, nil).Call(context.Background(), "m", call)
	require.Equal(t, 1, *n)
	require.False(t, errorsIsExhausted(err))
	var o Outcome
	require.ErrorAs(t, err, &o)
	require.Equal(t, time.Hour, o.RetryDelay())
}

// TestStreamOutcomeCountsAtItsEnd: the breaker hears a stream when it ends, so a
// target whose streams break after the first event opens after failure_threshold
// of them, and a complete stream resets the count.
func TestStreamOutcomeCountsAtItsEnd(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	g := breakerGuard(c, nil) // failure_threshold 5
	open := func() Finish {
		f, err := g.Stream(context.Background(), "m", func(context.Context, int) error { return nil })
		require.NoError(t, err)
		return f
	}
	cut := upstreamErr{transport: true}
	for range 4 {
		open()(cut)
	}
	require.Equal(t, 4, snapshot(g).ConsecutiveFailures)
	open()(nil)
	require.Equal(t, 0, snapshot(g).ConsecutiveFailures, "a complete stream is a success")

	f := open()
	require.Equal(t, 0, snapshot(g).ConsecutiveFailures, "nothing counts while the stream runs")
	f(cut)
	f(nil) // only the first result counts
	require.Equal(t, 1, snapshot(g).ConsecutiveFailures)

	open()(context.Canceled)
	require.Equal(t, 1, snapshot(g).ConsecutiveFailures, "a client that leaves counts as nothing")
	open()(upstreamErr{timeout: true}) // a stall
	for range 3 {
		open()(cut)
	}
	require.Equal(t, Open, state(g, "m"))
	_, err := g.Stream(context.Background(), "m", func(context.Context, int) error { return nil })
	require.ErrorIs(t, err, ErrBreakerOpen)
}

// TestStreamProbeHoldsTheHalfOpenBreaker: a half-open breaker's probe is the whole
// stream: no other call passes while it runs, and its end decides.
func TestStreamProbeHoldsTheHalfOpenBreaker(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	g := breakerGuard(c, func(s *BreakerSettings) { s.SuccessThreshold = 1 })
	b, _ := g.breakers.For("m")
	b.Trip(time.Minute)
	c.Advance(time.Minute)
	probe, err := g.Stream(context.Background(), "m", func(context.Context, int) error { return nil })
	require.NoError(t, err)
	require.Equal(t, HalfOpen, state(g, "m"), "the first event alone does not close it")
	require.ErrorIs(t, ok(g, "m"), ErrBreakerOpen, "the probe is still in flight")
	probe(upstreamErr{transport: true})
	require.Equal(t, Open, state(g, "m"), "a probe stream cut after its first event re-opens")

	c.Advance(time.Minute)
	probe, err = g.Stream(context.Background(), "m", func(context.Context, int) error { return nil })
	require.NoError(t, err)
	probe(nil)
	require.Equal(t, Closed, state(g, "m"))
}

// TestStaleStreamDoesNotCountInALaterPeriod: a stream admitted while closed that
// ends after the breaker tripped (by other calls) changes nothing.
func TestStaleStreamDoesNotCountInALaterPeriod(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	g := breakerGuard(c, func(s *BreakerSettings) { s.SuccessThreshold = 1 })
	long, err := g.Stream(context.Background(), "m", func(context.Context, int) error { return nil })
	require.NoError(t, err)
	b, _ := g.breakers.For("m")
	b.Trip(time.Minute)
	c.Advance(time.Minute)
	probe, err := g.Stream(context.Background(), "m", func(context.Context, int) error { return nil })
	require.NoError(t, err)
	long(upstreamErr{transport: true})
	require.Equal(t, HalfOpen, state(g, "m"), "the stale stream's cut does not re-open it")
	probe(nil)
	require.Equal(t, Closed, state(g, "m"))
}

func snapshot(g *Guard) Snapshot {
	b, _ := g.breakers.For("m")
	return b.Snapshot()
}

func errorsIsExhausted(err error) bool { return errors.Is(err, ErrRetriesExhausted) }

// TestStreamSlowCallIsTheTimeToFirstEvent: slow_call_threshold measures a stream
// up to its first event, never its whole length.
func TestStreamSlowCallIsTheTimeToFirstEvent(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name             string
		toFirst, toEnd   time.Duration
		consecutiveFails int
	}{
		{"slow first event", 2 * time.Second, 0, 1},
		{"fast first event, long stream", 10 * time.Millisecond, time.Hour, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newFakeClock()
			g := breakerGuard(c, func(s *BreakerSettings) { s.SlowCallThreshold = time.Second })
			finish, err := g.Stream(context.Background(), "m", func(context.Context, int) error { c.Advance(tc.toFirst); return nil })
			require.NoError(t, err)
			c.Advance(tc.toEnd)
			finish(nil)
			require.Equal(t, tc.consecutiveFails, snapshot(g).ConsecutiveFailures)
		})
	}
}
