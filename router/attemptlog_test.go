package router

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/providers"
)

// TestTraceLogListsEveryAttempt: with Trace.Log set, every upstream attempt is
// listed in the order it ended, with its target, error and a duration (the usage
// ledger's attempts); without it nothing is collected.
func TestTraceLogListsEveryAttempt(t *testing.T) {
	t.Parallel()
	f := newFixture(t, chainVM("chain", StrategyFailover, "a/m1", "b/m1"))
	f.a.errs["m1"] = []error{perr(503, "down")}
	trace := Trace{Log: &AttemptLog{}}
	_, _, err := f.r.Chat(context.Background(), &pb.ChatCompletionRequest{Model: "chain"}, Call{Trace: &trace})
	require.NoError(t, err)
	var list []AttemptInfo
	trace.Log.Each(func(a AttemptInfo) { list = append(list, a) })
	require.Len(t, list, 2)
	require.Equal(t, "a/m1", list[0].Route.String())
	var pe *providers.Error
	require.ErrorAs(t, list[0].Err, &pe)
	require.Equal(t, 503, pe.Status)
	require.Equal(t, "b/m1", list[1].Route.String())
	require.NoError(t, list[1].Err)
	for _, a := range list {
		require.Positive(t, a.Latency)
	}
}
