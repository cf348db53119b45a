package router

import (
	"context"
	"encoding/json"
	"github.com/switchyard/switchyard/internal/testutil"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/resilience"
)

// records decodes the JSON log lines in logs as level → messages.
func records(t *testing.T, logs *testutil.LogBuffer) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if line == "" {
			continue
		}
		var rec struct{ Level, Msg string }
		require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
		out[rec.Level] = append(out[rec.Level], rec.Msg)
	}
	return out
}

// TestFailoverLogsOnlyAtDebug: a request whose primary fails and whose backup
// answers writes nothing from the router at info level (the server's request line
// carries attempts and failovers); at debug, one line per failed attempt and one
// per failover.
func TestFailoverLogsOnlyAtDebug(t *testing.T) {
	t.Parallel()
	cases := []struct {
		level slog.Level
		want  map[string][]string
	}{
		{slog.LevelInfo, map[string][]string{}},
		{slog.LevelDebug, map[string][]string{"DEBUG": {"upstream attempt failed", "failing over"}}},
	}
	for _, tc := range cases {
		t.Run(tc.level.String(), func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, chainVM("chain", StrategyFailover, "a/m1", "b/m1"))
			logs := &testutil.LogBuffer{}
			f.r.log = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: tc.level}))
			f.a.errs["m1"] = []error{perr(503, "down")}
			var trace Trace
			_, route, err := f.r.Chat(context.Background(), &pb.ChatCompletionRequest{Model: "chain"}, Call{Trace: &trace, RequestID: "r1"})
			require.NoError(t, err)
			require.Equal(t, "b/m1", route.String())
			require.Equal(t, Trace{Attempts: 2, Failovers: 1}, trace, "what the request line reports")
			require.Equal(t, tc.want, records(t, logs))
		})
	}
}

type countingObserver struct {
	resilience.NopObserver
	transitions int
}

func (c *countingObserver) BreakerTransition(string, string, resilience.State, resilience.State) {
	c.transitions++
}

func TestBreakerLogOneLinePerTransition(t *testing.T) {
	t.Parallel()
	cases := []struct {
		from, to resilience.State
		level    string
		msg      string
	}{
		{resilience.Closed, resilience.Open, "WARN", "circuit breaker opened"},
		{resilience.HalfOpen, resilience.Open, "WARN", "circuit breaker opened"},
		{resilience.Open, resilience.HalfOpen, "INFO", "circuit breaker half-open: letting a probe through"},
		{resilience.HalfOpen, resilience.Closed, "INFO", "circuit breaker closed"},
	}
	for _, tc := range cases {
		t.Run(tc.from.String()+"→"+tc.to.String(), func(t *testing.T) {
			t.Parallel()
			logs := &testutil.LogBuffer{}
			next := &countingObserver{}
			obs := BreakerLog(slog.New(slog.NewJSONHandler(logs, nil)), next)
			obs.BreakerTransition("up", "gpt-4o", tc.from, tc.to)
			obs.Attempt("up", "gpt-4o", "success") // passed on, not logged
			require.Equal(t, 1, next.transitions, "the next observer (metrics) still hears it")
			require.Equal(t, map[string][]string{tc.level: {tc.msg}}, records(t, logs))
		})
	}
}

// TestBreakerOpensLogsOnceNotPerRequest drives a real breaker: many failing
// requests open it once, and the open breaker's fast failures log nothing.
func TestBreakerOpensLogsOnceNotPerRequest(t *testing.T) {
	t.Parallel()
	logs := &testutil.LogBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	p := &fakeProvider{name: "a", models: []string{"m1"}, errs: map[string][]error{}, calls: &[]string{}, keys: &[]string{}}
	noRetry := resilience.DefaultRetry()
	noRetry.MaxRetries = 0
	br := resilience.DefaultBreaker()
	br.FailureThreshold = 2
	guard := resilience.NewGuard(resilience.GuardConfig{Provider: "a", Retry: noRetry, Breaker: br, Observer: BreakerLog(log, resilience.NopObserver{})})
	r := New(log, []Target{{Provider: p, Guard: guard}})
	r.Discover(context.Background(), 0)
	logs.Reset() // "models discovered"
	for range 20 {
		p.errs["m1"] = append(p.errs["m1"], perr(503, "down"))
	}
	for range 20 {
		_, _, err := r.Chat(context.Background(), &pb.ChatCompletionRequest{Model: "a/m1"}, Call{})
		require.Error(t, err)
	}
	require.Equal(t, map[string][]string{"WARN": {"circuit breaker opened"}}, records(t, logs))
}
