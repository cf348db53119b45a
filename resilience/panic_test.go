package resilience

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A call that panics (a provider's bug) goes on panicking to the request's
// recovery, but first gives back what it held: the half-open breaker's probe
// (else the model is refused until an admin reset), the breaker's in-flight
// count and the retry budget's. It counts as nothing: the breaker stays
// half-open and the next call is its probe.
func TestAPanickingCallGivesItsPermitBack(t *testing.T) {
	t.Parallel()
	calls := map[string]func(g *Guard, call func(context.Context, int) error){
		"call": func(g *Guard, call func(context.Context, int) error) {
			_ = g.Call(context.Background(), "m", call)
		},
		"stream": func(g *Guard, call func(context.Context, int) error) {
			finish, err := g.Stream(context.Background(), "m", call)
			if err == nil {
				finish(nil)
			}
		},
	}
	for name, run := range calls {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newFakeClock()
			budget := NewBudget(DefaultBudgetPercent, DefaultBudgetMinConcurrency)
			g := NewGuard(GuardConfig{Provider: "p", Retry: DefaultRetry(), Breaker: DefaultBreaker(), Budget: budget, Clock: c})
			for range 5 {
				_ = g.Call(context.Background(), "m", func(context.Context, int) error { return status(503) })
			}
			require.Equal(t, Open, state(g, "m"))
			c.Advance(31 * time.Second)

			require.PanicsWithValue(t, "provider bug", func() {
				run(g, func(context.Context, int) error { panic("provider bug") })
			})
			require.Equal(t, HalfOpen, state(g, "m"), "a panic says nothing of the upstream")
			b, _ := g.breakers.For("m")
			b.mu.Lock()
			inflight, probing := b.inflight, b.probing
			b.mu.Unlock()
			require.Zero(t, inflight, "the breaker's in-flight count")
			require.False(t, probing, "the probe is given back")
			require.Zero(t, budget.inflight.Load(), "the retry budget's in-flight count")

			probed := false
			run(g, func(context.Context, int) error { probed = true; return nil })
			require.True(t, probed, "the next call is the breaker's probe, not refused")
		})
	}
}
