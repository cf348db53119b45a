package router

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/testutil"
)

// stepClock is a clock the test moves; its timers never fire.
type stepClock struct{ *testutil.Clock }

func (stepClock) Sleep(ctx context.Context, _ time.Duration) error {
	<-ctx.Done()
	return ctx.Err()
}

// Request health keeps the router's clock: failures count in the report's
// ten-minute window, make their model failing, and leave it ten minutes on,
// with no sleep.
func TestRequestHealthKeepsTheRoutersClock(t *testing.T) {
	t.Parallel()
	clock := stepClock{testutil.NewClock(time.Date(2026, 1, 1, 12, 0, 30, 0, time.UTC))}
	f := newFixtureWith(t, []Option{WithClock(clock)})
	f.a.errs["m1"] = []error{perr(400, "a"), perr(400, "b"), perr(400, "c")} // not breaker failures: all three are called
	for range 3 {
		_, _, err := f.r.Chat(context.Background(), &pb.ChatCompletionRequest{Model: "a/m1"}, Call{})
		require.Error(t, err)
	}
	report := func() ProviderReport {
		for _, p := range f.r.Report() {
			if p.Name == "a" {
				return p
			}
		}
		t.Fatal("no report for a")
		return ProviderReport{}
	}
	got := report()
	require.Equal(t, 3, got.RecentFailures)
	require.Equal(t, StatusDegraded, got.Status, got.Reason)

	clock.Advance(9 * time.Minute)
	require.Equal(t, 3, report().RecentFailures, "still inside the window")
	clock.Advance(time.Minute)
	got = report()
	require.Zero(t, got.RecentRequests, "ten minutes on, out of the window")
	require.Equal(t, StatusHealthy, got.Status, got.Reason)
}
