package router

import (
	"context"
	"testing"

	"github.com/switchyard/switchyard/providers"
)

func BenchmarkWalkVirtualModel(b *testing.B) {
	b.ReportAllocs()
	f := newFixture(&testing.T{}, chainVM("chat", StrategyRoundRobin, "a/m1", "b/m1", "a/m2"))
	try := func(context.Context, Route, Target, providers.Attempt) (struct{}, error) { return struct{}{}, nil }
	for b.Loop() {
		_, _, _ = walk(f.r, context.Background(), "chat", Call{}, try, nil)
	}
}

// TestResolutionAllocationCeiling: resolving a virtual or provider model and picking
// a target allocates nothing: the per-attempt call is a value.
func TestResolutionAllocationCeiling(t *testing.T) {
	f := newFixture(t, chainVM("chat", StrategyRoundRobin, "a/m1", "b/m1", "a/m2"))
	try := func(context.Context, Route, Target, providers.Attempt) (struct{}, error) { return struct{}{}, nil }
	for _, model := range []string{"chat", "a/m1", "m2"} {
		run := func() { _, _, _ = walk(f.r, context.Background(), model, Call{}, try, nil) }
		run()
		if n := testing.AllocsPerRun(200, run); n > 0 {
			t.Errorf("%s: %.0f allocations", model, n)
		}
	}
}
