package router

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/resilience"
)

// fakeProvider answers per model from a script of errors (nil = success) and
// records every call as "provider/model".
type fakeProvider struct {
	name   string
	models []string
	mu     sync.Mutex
	errs   map[string][]error
	calls  *[]string
	keys   *[]string
}

func (f *fakeProvider) Name() string { return f.name }

func (f *fakeProvider) Models(context.Context) ([]string, error) { return f.models, nil }

func (f *fakeProvider) next(req *providers.Request) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	*f.calls = append(*f.calls, f.name+"/"+req.Model)
	*f.keys = append(*f.keys, req.IdempotencyKey)
	q := f.errs[req.Model]
	if len(q) == 0 {
		return nil
	}
	f.errs[req.Model] = q[1:]
	return q[0]
}

func (f *fakeProvider) Chat(ctx context.Context, req *providers.Request) (*pb.ChatCompletion, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := f.next(req); err != nil {
		return nil, err
	}
	return &pb.ChatCompletion{Model: req.Model}, nil
}

func (f *fakeProvider) Stream(_ context.Context, req *providers.Request) (providers.Stream, error) {
	if err := f.next(req); err != nil {
		return nil, err
	}
	return emptyStream{}, nil
}

type emptyStream struct{}

func (emptyStream) Recv() (*pb.ChatCompletionChunk, error) { return nil, io.EOF }
func (emptyStream) Close() error                           { return nil }

type fixture struct {
	r     *Router
	a, b  *fakeProvider
	calls []string
	keys  []string
}

func newFixture(t *testing.T, vms ...VirtualModel) *fixture {
	t.Helper()
	return newFixtureWith(t, nil, vms...)
}

// newFixtureWith is newFixture with the router's options.
func newFixtureWith(t *testing.T, opts []Option, vms ...VirtualModel) *fixture {
	t.Helper()
	f := &fixture{}
	f.a = &fakeProvider{name: "a", models: []string{"m1", "m2", "shared"}, errs: map[string][]error{}, calls: &f.calls, keys: &f.keys}
	f.b = &fakeProvider{name: "b", models: []string{"m1", "shared"}, errs: map[string][]error{}, calls: &f.calls, keys: &f.keys}
	noRetry := resilience.DefaultRetry()
	noRetry.MaxRetries = 0
	br := resilience.DefaultBreaker()
	br.FailureThreshold = 1
	br.Scope = resilience.ScopeModel
	var targets []Target
	for _, p := range []*fakeProvider{f.a, f.b} {
		targets = append(targets, Target{Provider: p,
			Guard: resilience.NewGuard(resilience.GuardConfig{Provider: p.name, Retry: noRetry, Breaker: br})})
	}
	f.r = New(slog.New(slog.NewTextHandler(io.Discard, nil)), targets, opts...)
	f.r.Discover(context.Background(), 0)
	require.NoError(t, f.r.SetVirtualModels(vms))
	return f
}

func (f *fixture) chat(model string) (Route, error) {
	f.calls = f.calls[:0]
	f.keys = f.keys[:0]
	_, route, err := f.r.Chat(context.Background(), &pb.ChatCompletionRequest{Model: model}, Call{IdempotencyKey: "k"})
	return route, err
}

func perr(status int, msg string) error {
	return &providers.Error{Provider: "x", Status: status, Message: msg}
}

func chainVM(source string, strategy Strategy, targets ...string) VirtualModel {
	vm := VirtualModel{Source: source, Strategy: strategy, Failover: DefaultFailover()}
	for _, t := range targets {
		vm.Targets = append(vm.Targets, VirtualTarget{Model: t, Weight: 1})
	}
	return vm
}

func TestDirectResolution(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	route, err := f.chat("m2")
	require.NoError(t, err)
	require.Equal(t, "a/m2", route.String())
	route, err = f.chat("b/m1")
	require.NoError(t, err)
	require.Equal(t, "b/m1", route.String())
	route, err = f.chat("b/unlisted")
	require.NoError(t, err, "an explicit provider routes even to an unlisted model")
	require.Equal(t, "b/unlisted", route.String())
	_, err = f.chat("nope")
	require.ErrorIs(t, err, ErrModelNotFound)
	_, err = f.chat("c/m1")
	require.ErrorIs(t, err, ErrModelNotFound)
}

func TestFailoverTriggers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		err   error
		moves bool
	}{
		{"500", perr(500, "boom"), true},
		{"503", perr(503, "unavailable"), true},
		{"429", perr(429, "rate limited"), true},
		{"transport", &providers.Error{Status: 502, Transport: true, Message: "refused"}, true},
		{"404 model not found", perr(404, "The model `m1` does not exist"), true},
		{"400 model not found code", &providers.Error{Status: 400, Code: "model_not_found", Message: "nope"}, true},
		{"400 upstream failure", perr(400, "Upstream request failed"), true},
		{"404 Azure deployment not found", &providers.Error{Status: 404, Code: "DeploymentNotFound",
			Message: "The API deployment for this resource does not exist."}, true},
		{"400 unsupported model", perr(400, "unsupported model: m1"), true},
		{"400 context_length_exceeded code", &providers.Error{Status: 400, Code: "context_length_exceeded",
			Message: "This model's maximum context length is 8192 tokens."}, true},
		{"400 maximum context length message", perr(400, "This model's maximum context length is 8192 tokens, however you requested 9000"), true},
		{"400 Anthropic prompt too long", &providers.Error{Status: 400, Type: "invalid_request_error",
			Message: "prompt is too long: 201234 tokens > 200000 maximum"}, true},
		{"400 Anthropic input and max_tokens past the window", &providers.Error{Status: 400, Type: "invalid_request_error",
			Message: "input length and `max_tokens` exceed context limit: 197000 + 8192 > 200000, decrease input length or `max_tokens` and try again"}, true},
		{"400 content policy stays put", &providers.Error{Status: 400, Code: "content_policy_violation",
			Message: "Your request was rejected as a result of our safety system."}, false},
		{"400 plain", perr(400, "Invalid 'temperature'"), false},
		{"401", perr(401, "bad key"), false},
		{"cancelled", context.Canceled, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, chainVM("chat", StrategyFailover, "a/m1", "b/m1"))
			f.a.errs["m1"] = []error{tc.err}
			route, err := f.chat("chat")
			if tc.moves {
				require.NoError(t, err)
				require.Equal(t, "b/m1", route.String())
				require.Equal(t, []string{"a/m1", "b/m1"}, f.calls)
				require.Equal(t, []string{"k", ""}, f.keys, "the failover attempt goes without the idempotency key")
			} else {
				require.Error(t, err)
				require.Equal(t, []string{"a/m1"}, f.calls)
			}
		})
	}
}

func TestLastTargetsErrorIsReturned(t *testing.T) {
	t.Parallel()
	f := newFixture(t, chainVM("chat", StrategyFailover, "a/m1", "b/m1"))
	f.a.errs["m1"] = []error{perr(503, "first")}
	f.b.errs["m1"] = []error{perr(502, "second")}
	route, err := f.chat("chat")
	var pe *providers.Error
	require.True(t, errors.As(err, &pe))
	require.Equal(t, 502, pe.Status)
	require.Equal(t, "second", pe.Message)
	require.Equal(t, "b/m1", route.String())
}

func TestOpenBreakerIsSkippedWithoutCounting(t *testing.T) {
	t.Parallel()
	vm := chainVM("chat", StrategyFailover, "a/m1", "b/m1", "a/m2")
	vm.Failover.MaxAttempts = 1
	f := newFixture(t, vm)
	f.a.errs["m1"] = []error{perr(503, "down")} // opens a's breaker (threshold 1)
	_, err := f.chat("chat")
	require.NoError(t, err)
	f.b.errs["m1"] = []error{perr(503, "b down")}
	_, err = f.chat("chat")
	require.Error(t, err, "b failed and max_attempts=1 stops before a/m2")
	require.Equal(t, []string{"b/m1"}, f.calls, "a/m1 was skipped: open breaker, no upstream call, not an attempt")
}

func TestMaxAttempts(t *testing.T) {
	t.Parallel()
	vm := chainVM("chat", StrategyFailover, "a/m1", "b/m1", "a/m2")
	vm.Failover.MaxAttempts = 1
	f := newFixture(t, vm)
	f.a.errs["m1"] = []error{perr(500, "x")}
	f.b.errs["m1"] = []error{perr(500, "y")}
	_, err := f.chat("chat")
	require.Error(t, err)
	require.Equal(t, []string{"a/m1", "b/m1"}, f.calls)
}

func TestStrategies(t *testing.T) {
	t.Parallel()
	f := newFixture(t, chainVM("rr", StrategyRoundRobin, "a/m1", "b/m1", "a/m2"))
	var got []string
	for range 6 {
		route, err := f.chat("rr")
		require.NoError(t, err)
		got = append(got, route.String())
	}
	require.Equal(t, []string{"a/m1", "b/m1", "a/m2", "a/m1", "b/m1", "a/m2"}, got, "round robin is exact")

	vm := chainVM("w", StrategyWeighted, "a/m1", "b/m1")
	vm.Targets[0].Weight, vm.Targets[1].Weight = 3, 1
	f = newFixture(t, vm)
	counts := map[string]int{}
	for range 4000 {
		route, _ := f.chat("w")
		counts[route.String()]++
	}
	require.InDelta(t, 3000, counts["a/m1"], 200, "weighted follows weights")

	vm = chainVM("rrnf", StrategyRoundRobin, "a/m1", "b/m1")
	vm.Failover.Enabled = false
	f = newFixture(t, vm)
	f.a.errs["m1"] = []error{perr(503, "x")}
	_, err := f.chat("rrnf")
	require.Error(t, err, "failover: false on a non-failover strategy returns the error")

	vm = chainVM("fo", StrategyFailover, "a/m1", "b/m1")
	vm.Failover.Enabled = false
	f = newFixture(t, vm)
	f.a.errs["m1"] = []error{perr(503, "x")}
	_, err = f.chat("fo")
	require.NoError(t, err, "the failover strategy always fails over")
}

func TestRoundRobinFailoverOrder(t *testing.T) {
	t.Parallel()
	f := newFixture(t, chainVM("rr", StrategyRoundRobin, "a/m1", "b/m1", "a/m2"))
	_, _ = f.chat("rr") // first pick a/m1; next pick b/m1
	f.b.errs["m1"] = []error{perr(500, "x")}
	route, err := f.chat("rr")
	require.NoError(t, err)
	require.Equal(t, []string{"b/m1", "a/m1"}, f.calls, "after the pick, the others in declared order")
	require.Equal(t, "a/m1", route.String())
}

func TestShadowing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, chainVM("shared", StrategyFailover, "b/shared", "a/shared"), chainVM("a/m1", StrategyFailover, "a/m1", "b/m1"))
	route, err := f.chat("shared")
	require.NoError(t, err)
	require.Equal(t, "b/shared", route.String(), "a virtual model shadows the real model")
	f.a.errs["m1"] = []error{perr(503, "x")}
	route, err = f.chat("a/m1")
	require.NoError(t, err)
	require.Equal(t, "b/m1", route.String(), "a shadowed provider/model walks the chain")
	route, err = f.chat("a/m2")
	require.NoError(t, err)
	require.Equal(t, "a/m2", route.String(), "other explicit models bypass virtual models")
	ids := map[string]string{}
	for _, m := range f.r.Models() {
		ids[m.ID] = m.OwnedBy
	}
	require.Equal(t, "switchyard", ids["shared"])
}

func TestInvalidVirtualModels(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cases := map[string][]VirtualModel{
		"needs at least one target":             {{Source: "x"}},
		"unknown provider":                      {chainVM("x", StrategyFailover, "zz/m1")},
		"must be provider/model":                {chainVM("x", StrategyFailover, "m1")},
		"names unknown provider":                {chainVM("a/y", StrategyFailover, "x/m")},
		"defined twice":                         {chainVM("x", StrategyFailover, "a/m1"), chainVM("x", StrategyFailover, "b/m1")},
		"unknown strategy":                      {chainVM("x", "random", "a/m1")},
		"needs a target with a positive weight": {{Source: "x", Strategy: StrategyWeighted, Targets: []VirtualTarget{{Model: "a/m1"}}}},
		"source is longer than 256 bytes":       {chainVM(strings.Repeat("x", 257), StrategyFailover, "a/m1")},
		"more than 64":                          {chainVM("x", StrategyFailover, slices.Repeat([]string{"a/m1"}, 65)...)},
	}
	for want, vms := range cases {
		t.Run(want, func(t *testing.T) {
			err := f.r.SetVirtualModels(vms)
			require.ErrorIs(t, err, ErrInvalidVirtualModel)
			require.ErrorContains(t, err, want)
		})
	}
	require.Empty(t, f.r.VirtualModels(), "a rejected change leaves the table as it was")
}

func TestPhrases(t *testing.T) {
	t.Parallel()
	cases := []struct {
		phrase string
		status int
		text   string
		match  bool
	}{
		{"model not found", 404, "the model was not found", true},
		{"model not found", 404, "model missing", false},
		{"404 deprecated", 404, "this model is deprecated", true},
		{"404 deprecated", 400, "this model is deprecated", false},
		{"4xx", 418, "anything", true},
		{"4xx", 500, "anything", false},
		{"Overloaded", 529, "overloaded_error", true},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%d %s", tc.phrase, tc.status, tc.text), func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.match, ParsePhrase(tc.phrase).matches(tc.status, tc.text))
		})
	}
}

func TestTargetsResolveDirectlySoChainsCannotLoop(t *testing.T) {
	t.Parallel()
	f := newFixture(t, chainVM("a/m1", StrategyFailover, "b/m1"), chainVM("b/m1", StrategyFailover, "a/m1"))
	route, err := f.chat("a/m1")
	require.NoError(t, err)
	require.Equal(t, "b/m1", route.String(), "the target is the provider model, not the virtual model shadowing it")
	require.Equal(t, []string{"b/m1"}, f.calls)
}

func TestStreamFailsOverBeforeFirstEvent(t *testing.T) {
	t.Parallel()
	f := newFixture(t, chainVM("chat", StrategyFailover, "a/m1", "b/m1"))
	f.a.errs["m1"] = []error{&providers.Error{Status: 502, Message: "provider returned an empty stream", Err: providers.ErrEmptyResponse}}
	_, route, err := f.r.Stream(context.Background(), &pb.ChatCompletionRequest{Model: "chat"}, Call{})
	require.NoError(t, err)
	require.Equal(t, "b/m1", route.String())
}

func TestReportMarksAKeepsFailingModelDegraded(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	status := func(name string) ProviderReport {
		for _, rep := range f.r.Report() {
			if rep.Name == name {
				return rep
			}
		}
		t.Fatalf("no provider %s", name)
		return ProviderReport{}
	}
	require.Equal(t, StatusHealthy, status("a").Status)
	f.a.errs["m2"] = []error{perr(400, "bad"), perr(400, "bad")}
	_, _ = f.chat("a/m2")
	_, _ = f.chat("a/m2")
	_, _ = f.chat("a/m2") // succeeds
	require.Equal(t, StatusHealthy, status("a").Status, "2 failures are not yet a pattern")
	f.a.errs["m2"] = []error{perr(404, "gone")}
	_, _ = f.chat("a/m2")
	rep := status("a")
	require.Equal(t, StatusDegraded, rep.Status, "3 failures making half the model's requests")
	require.Equal(t, 4, rep.RecentRequests)
	require.Equal(t, 3, rep.RecentFailures)
	require.Contains(t, rep.Reason, "m2")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, _ = f.r.Chat(ctx, &pb.ChatCompletionRequest{Model: "b/m1"}, Call{})
	require.Zero(t, status("b").RecentRequests, "a cancelled call is not a request to the provider")
}

// A trip without a model is the whole provider's: with breakers per model,
// every model's calls are refused (none consulted the provider's own breaker,
// so it tripped nothing), other providers' are not, and a reset ends it.
func TestATripWithoutAModelTripsEveryModel(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, err := f.chat("a/m1")
	require.NoError(t, err)
	e, err := f.r.TripBreaker("a", "", time.Hour)
	require.NoError(t, err)
	require.Equal(t, resilience.Open, e.State)
	e, err = f.r.ResetBreaker("a", "m1") // one model's reset during the provider's trip
	require.NoError(t, err)
	require.Equal(t, "m1", e.Model)
	require.Equal(t, resilience.Closed, e.State, "m1's own breaker")
	for _, m := range []string{"a/m1", "a/m2"} {
		_, err = f.chat(m)
		require.ErrorIs(t, err, resilience.ErrBreakerOpen, m)
	}
	_, err = f.chat("b/m1")
	require.NoError(t, err, "another provider's calls go on")
	require.Equal(t, "", f.r.targets["a"].Guard.Breakers().List()[0].Model, "listed as the provider's")
	_, err = f.r.ResetBreaker("a", "")
	require.NoError(t, err)
	_, err = f.chat("a/m1")
	require.NoError(t, err, "the reset ended it")
	_, err = f.r.TripBreaker("zz", "", time.Hour)
	require.ErrorIs(t, err, ErrUnknownProvider)
}
