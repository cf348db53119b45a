package resilience

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// genBreaker is a breaker driven directly through allow and done, so that calls can
// be held "in flight" across state changes without goroutines.
type genBreaker struct {
	t *testing.T
	b *Breaker
	c *fakeClock
}

func newGenBreaker(t *testing.T, mutate func(*BreakerSettings)) genBreaker {
	s := DefaultBreaker()
	if mutate != nil {
		mutate(&s)
	}
	c := newFakeClock()
	return genBreaker{t: t, b: NewBreaker(s, c), c: c}
}

// admit takes a permit and fails the test if the breaker refuses.
func (g genBreaker) admit() permit {
	g.t.Helper()
	p, _, ok := g.b.allow()
	require.True(g.t, ok, "admitted")
	return p
}

func (g genBreaker) refused() bool {
	p, _, ok := g.b.allow()
	if ok {
		g.b.done(p, kindSuccess, nil, 0) // put it back without a verdict change
	}
	return !ok
}

// report ends a call admitted by p with err.
func (g genBreaker) report(p permit, err error) {
	k, o := classify(err)
	g.b.done(p, k, o, 0)
}

// run admits and ends one call at once.
func (g genBreaker) run(err error) { g.report(g.admit(), err) }

func (g genBreaker) trip() {
	for range g.b.settings.FailureThreshold {
		g.run(status(503))
	}
	require.Equal(g.t, Open, g.b.Snapshot().State)
}

func (g genBreaker) state() State { return g.b.Snapshot().State }

func (g genBreaker) failures() int { return g.b.Snapshot().ConsecutiveFailures }

func TestStaleResultsDoNotChangeTheCurrentPeriod(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		mutate func(*BreakerSettings)
		run    func(t *testing.T, g genBreaker)
	}{
		{"stale failure after half-open does not reopen, and the probe's success then counts", nil,
			func(t *testing.T, g genBreaker) {
				stale := g.admit() // admitted while closed
				g.trip()
				g.c.Advance(30 * time.Second)
				probe := g.admit()
				require.Equal(t, HalfOpen, g.state())
				g.report(stale, status(503))
				require.Equal(t, HalfOpen, g.state(), "a call from the closed period cannot re-open it")
				require.True(t, g.refused(), "the probe is still the only call out")
				g.report(probe, nil)
				require.Equal(t, HalfOpen, g.state(), "one probe success of two")
				g.run(nil)
				require.Equal(t, Closed, g.state(), "the probe successes count and close it")
			}},
		{"stale success does not close", func(s *BreakerSettings) { s.SuccessThreshold = 1 },
			func(t *testing.T, g genBreaker) {
				g.trip()
				g.c.Advance(30 * time.Second)
				old := g.admit() // probe of the first half-open period
				g.b.Trip(time.Minute)
				g.c.Advance(time.Minute)
				probe := g.admit() // probe of the second one
				g.report(old, nil)
				require.Equal(t, HalfOpen, g.state(), "an earlier period's probe cannot close it")
				require.True(t, g.refused(), "nor free a second probe slot")
				g.report(probe, nil)
				require.Equal(t, Closed, g.state())
			}},
		{"stale probe failure does not reopen", nil,
			func(t *testing.T, g genBreaker) {
				g.trip()
				g.c.Advance(30 * time.Second)
				old := g.admit()
				g.b.Trip(time.Minute)
				g.c.Advance(time.Minute)
				probe := g.admit()
				g.report(old, status(503))
				require.Equal(t, HalfOpen, g.state())
				g.report(probe, nil)
				g.run(nil)
				require.Equal(t, Closed, g.state())
			}},
		{"stale failure does not count in a new closed period", nil,
			func(t *testing.T, g genBreaker) {
				stale := g.admit()
				g.trip()
				g.c.Advance(30 * time.Second)
				g.run(nil)
				g.run(nil)
				require.Equal(t, Closed, g.state())
				g.report(stale, status(503))
				require.Zero(t, g.failures())
			}},
		{"stale success does not clear a new closed period's failures", func(s *BreakerSettings) { s.FailureThreshold = 3 },
			func(t *testing.T, g genBreaker) {
				stale := g.admit()
				g.trip()
				g.c.Advance(30 * time.Second)
				g.run(nil)
				g.run(nil)
				g.run(status(503))
				g.run(status(503))
				g.report(stale, nil)
				require.Equal(t, 2, g.failures())
				g.run(status(503))
				require.Equal(t, Open, g.state())
			}},
		{"a failure admitted before an admin reset is ignored", nil,
			func(t *testing.T, g genBreaker) {
				stale := g.admit()
				for range 4 {
					g.run(status(503))
				}
				g.b.Reset()
				g.report(stale, status(503))
				require.Zero(t, g.failures())
			}},
		{"a probe cut off by an admin reset frees no later probe slot", nil,
			func(t *testing.T, g genBreaker) {
				g.trip()
				g.c.Advance(30 * time.Second)
				old := g.admit()
				g.b.Reset()
				g.trip()
				g.c.Advance(30 * time.Second)
				probe := g.admit()
				g.report(old, nil)
				require.True(t, g.refused(), "the current probe is still out")
				g.report(probe, status(503))
				require.Equal(t, Open, g.state(), "the current probe's failure re-opens it")
			}},
		{"results of the current period still count", nil,
			func(t *testing.T, g genBreaker) {
				a, b := g.admit(), g.admit()
				g.report(a, status(503))
				g.report(b, status(503))
				require.Equal(t, 2, g.failures())
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, newGenBreaker(t, tc.mutate))
		})
	}
}

// TestStaleCallCannotDiscardTheProbe is the case through Guard.Call: a call
// admitted while closed fails after the breaker went half-open, while the probe is
// out; the probe's success must count.
func TestStaleCallCannotDiscardTheProbe(t *testing.T) {
	t.Parallel()
	c := newFakeClock()
	g := breakerGuard(c, nil)
	hold := func(started chan<- struct{}, release <-chan error) func(context.Context, int) error {
		return func(context.Context, int) error { close(started); return <-release }
	}
	// each call runs in its own goroutine and hands its result back on a channel
	start := func(started chan<- struct{}, release <-chan error) <-chan error {
		res := make(chan error, 1)
		go func() { res <- g.Call(context.Background(), "m", hold(started, release)) }()
		return res
	}
	staleStarted, staleRelease := make(chan struct{}), make(chan error)
	staleRes := start(staleStarted, staleRelease)
	<-staleStarted
	for range 5 {
		_ = fail(g, "m", status(503))
	}
	require.Equal(t, Open, state(g, "m"))
	c.Advance(30 * time.Second)

	probeStarted, probeRelease := make(chan struct{}), make(chan error)
	probeRes := start(probeStarted, probeRelease)
	<-probeStarted
	staleRelease <- status(503)
	require.Error(t, <-staleRes) // Call has returned: its result is recorded
	require.Equal(t, HalfOpen, state(g, "m"), "the stale failure did not re-open it")
	probeRelease <- nil
	require.NoError(t, <-probeRes)
	require.Equal(t, HalfOpen, state(g, "m"), "the probe's success counted (one of two)")
	require.NoError(t, ok(g, "m"))
	require.Equal(t, Closed, state(g, "m"))
}
