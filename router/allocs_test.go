package router

import (
	"context"
	"testing"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/providers"
)

func BenchmarkWalkVirtualModel(b *testing.B) {
	b.ReportAllocs()
	f := newFixture(&testing.T{}, chainVM("chat", StrategyRoundRobin, "a/m1", "b/m1", "a/m2"))
	body := &pb.ChatCompletionRequest{Model: "chat"}
	try := func(context.Context, Route, Target, *providers.Request) (struct{}, error) { return struct{}{}, nil }
	for b.Loop() {
		_, _, _ = walk(f.r, context.Background(), body, Call{}, try, nil)
	}
}

// TestResolutionAllocationCeiling: resolving a virtual or provider model and picking
// a target allocates only the per-attempt request, never per target.
func TestResolutionAllocationCeiling(t *testing.T) {
	f := newFixture(t, chainVM("chat", StrategyRoundRobin, "a/m1", "b/m1", "a/m2"))
	try := func(context.Context, Route, Target, *providers.Request) (struct{}, error) { return struct{}{}, nil }
	for _, model := range []string{"chat", "a/m1", "m2"} {
		body := &pb.ChatCompletionRequest{Model: model}
		run := func() { _, _, _ = walk(f.r, context.Background(), body, Call{}, try, nil) }
		run()
		if n := testing.AllocsPerRun(200, run); n > 1 {
			t.Errorf("%s: %.0f allocations", model, n)
		}
	}
}
