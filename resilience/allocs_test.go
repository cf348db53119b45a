package resilience

import (
	"context"
	"testing"
)

func BenchmarkGuardSuccess(b *testing.B) {
	b.ReportAllocs()
	g := NewGuard(GuardConfig{Provider: "p", Retry: DefaultRetry(), Breaker: DefaultBreaker(), Budget: NewBudget(20, 3)})
	call := func(context.Context, int) error { return nil }
	for b.Loop() {
		_ = g.Call(context.Background(), "m", call)
	}
}

// TestGuardSuccessAllocatesNothing: the breaker and retry bookkeeping of a
// successful call must not allocate.
func TestGuardSuccessAllocatesNothing(t *testing.T) {
	for _, scope := range []Scope{ScopeProvider, ScopeModel} {
		br := DefaultBreaker()
		br.Scope = scope
		g := NewGuard(GuardConfig{Provider: "p", Retry: DefaultRetry(), Breaker: br, Budget: NewBudget(20, 3)})
		call := func(context.Context, int) error { return nil }
		ctx := context.Background()
		_ = g.Call(ctx, "m", call)
		if n := testing.AllocsPerRun(200, func() { _ = g.Call(ctx, "m", call) }); n > 0 {
			t.Errorf("scope %s: %.0f allocations per successful call", scope, n)
		}
	}
}
