package router

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/resilience"
)

// hedgeClock's timers fire at once (fire) or never (until their context ends).
type hedgeClock struct{ fire bool }

func (hedgeClock) Now() time.Time { return time.Now() }

func (c hedgeClock) Sleep(ctx context.Context, d time.Duration) error {
	if c.fire {
		return ctx.Err()
	}
	<-ctx.Done()
	return ctx.Err()
}

// gateProvider answers at once, or (slow) only when released or cancelled, and
// records the calls cancelled while waiting.
type gateProvider struct {
	name      string
	slow      bool
	release   chan struct{}
	mu        sync.Mutex
	calls     int
	cancelled int
	answered  context.Context // the context of the last call that answered
}

func (g *gateProvider) Name() string                             { return g.name }
func (g *gateProvider) Models(context.Context) ([]string, error) { return []string{"m"}, nil }

func (g *gateProvider) wait(ctx context.Context) error {
	g.mu.Lock()
	g.calls++
	g.mu.Unlock()
	if !g.slow {
		g.mu.Lock()
		g.answered = ctx
		g.mu.Unlock()
		return nil
	}
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		g.mu.Lock()
		g.cancelled++
		g.mu.Unlock()
		return ctx.Err()
	}
}

func (g *gateProvider) Chat(ctx context.Context, req *providers.Request) (*pb.ChatCompletion, error) {
	if err := g.wait(ctx); err != nil {
		return nil, err
	}
	return &pb.ChatCompletion{Model: g.name}, nil
}

func (g *gateProvider) Stream(ctx context.Context, req *providers.Request) (providers.Stream, error) {
	if err := g.wait(ctx); err != nil {
		return nil, err
	}
	return emptyStream{}, nil
}

func (g *gateProvider) counts() (int, int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls, g.cancelled
}

// hedgeRecorder hears hedge decisions; a capped one releases the slow primary.
type hedgeRecorder struct {
	nopObserver
	mu       sync.Mutex
	outcomes map[string]int
	release  chan struct{}
}

func (h *hedgeRecorder) Hedge(vm, outcome string) {
	h.mu.Lock()
	h.outcomes[vm+" "+outcome]++
	h.mu.Unlock()
	if outcome == HedgeCapped {
		h.release <- struct{}{}
	}
}

func hedgeFixture(t *testing.T, fire, slowPrimary bool) (*Router, *gateProvider, *gateProvider, *hedgeRecorder) {
	t.Helper()
	release := make(chan struct{}, 100)
	p := &gateProvider{name: "p", slow: slowPrimary, release: release}
	b := &gateProvider{name: "b", release: release}
	var targets []Target
	for _, g := range []*gateProvider{p, b} {
		targets = append(targets, Target{Provider: g, Guard: resilience.NewGuard(resilience.GuardConfig{Provider: g.name,
			Retry: resilience.DefaultRetry(), Breaker: resilience.DefaultBreaker()})})
	}
	rec := &hedgeRecorder{outcomes: map[string]int{}, release: release}
	r := New(slog.New(slog.NewTextHandler(io.Discard, nil)), targets, WithObserver(rec), WithClock(hedgeClock{fire: fire}))
	r.Discover(context.Background(), 0)
	vm := chainVM("chat", StrategyFailover, "p/m", "b/m")
	vm.HedgeAfter = time.Second
	require.NoError(t, r.SetVirtualModels([]VirtualModel{vm}))
	return r, p, b, rec
}

// TestHedgeBackupWinsAndThePrimaryIsCancelled: a primary with nothing within
// hedge_after gets the backup started beside it; the backup's answer wins, the
// primary's call is cancelled (its upstream request closed), and the request's
// trace says it was hedged. Unary calls and streams alike.
func TestHedgeBackupWinsAndThePrimaryIsCancelled(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "unary", true: "stream"}[stream], func(t *testing.T) {
			t.Parallel()
			r, p, b, rec := hedgeFixture(t, true, true)
			var trace Trace
			call := Call{Trace: &trace}
			body := &pb.ChatCompletionRequest{Model: "chat"}
			var route Route
			var err error
			if stream {
				var s providers.Stream
				s, route, err = r.Stream(context.Background(), body, call)
				require.NoError(t, err)
				s.Close()
			} else {
				_, route, err = r.Chat(context.Background(), body, call)
				require.NoError(t, err)
			}
			require.Equal(t, "b/m", route.String(), "the backup answered first")
			pc, pcancel := p.counts()
			require.Equal(t, []int{1, 1}, []int{pc, pcancel}, "the primary was called once and cancelled")
			bc, _ := b.counts()
			require.Equal(t, 1, bc)
			require.NoError(t, b.answered.Err(), "the winner's call lives on (a stream reads from it)")
			require.True(t, trace.Hedged)
			require.Equal(t, int64(2), trace.Attempts)
			require.Equal(t, map[string]int{"chat " + HedgeBackupWon: 1}, rec.outcomes)
			for _, e := range r.Breakers() {
				require.Zero(t, e.ConsecutiveFailures, "a cancelled loser is no failure of %s", e.Provider)
			}
		})
	}
}

// TestNoHedgeWhenThePrimaryAnswersInTime: an answer before hedge_after never
// starts the backup.
func TestNoHedgeWhenThePrimaryAnswersInTime(t *testing.T) {
	t.Parallel()
	r, p, b, rec := hedgeFixture(t, false, false)
	var trace Trace
	_, route, err := r.Chat(context.Background(), &pb.ChatCompletionRequest{Model: "chat"}, Call{Trace: &trace})
	require.NoError(t, err)
	require.Equal(t, "p/m", route.String())
	pc, _ := p.counts()
	bc, _ := b.counts()
	require.Equal(t, []int{1, 0}, []int{pc, bc})
	require.False(t, trace.Hedged)
	require.Empty(t, rec.outcomes)
}

// TestHedgesAreCapped: with every primary slow, at most one request in ten is
// hedged; the others wait for their primary.
func TestHedgesAreCapped(t *testing.T) {
	t.Parallel()
	r, p, b, rec := hedgeFixture(t, true, true)
	for range 20 {
		_, _, err := r.Chat(context.Background(), &pb.ChatCompletionRequest{Model: "chat"}, Call{})
		require.NoError(t, err)
	}
	require.Equal(t, map[string]int{"chat " + HedgeBackupWon: 2, "chat " + HedgeCapped: 18}, rec.outcomes)
	bc, _ := b.counts()
	require.Equal(t, 2, bc, "the backup was started twice in 20 requests")
	pc, pcancel := p.counts()
	require.Equal(t, []int{20, 2}, []int{pc, pcancel})
}

// stubbornProvider answers even when cancelled, with usage: an upstream that
// finished the work before it saw the cancellation (and billed it).
type stubbornProvider struct{ gateProvider }

func (s *stubbornProvider) Chat(ctx context.Context, req *providers.Request) (*pb.ChatCompletion, error) {
	<-ctx.Done()
	return &pb.ChatCompletion{Model: s.name, Usage: &pb.Usage{PromptTokens: 100, CompletionTokens: 7}}, nil
}

// TestHedgeLoserThatAnsweredIsInTheTrace: the losing side of a hedge that
// answered anyway has its answer dropped, and its usage in the trace (its
// upstream billed it); the winner's answer is the call's.
func TestHedgeLoserThatAnsweredIsInTheTrace(t *testing.T) {
	t.Parallel()
	release := make(chan struct{}, 1)
	p := &stubbornProvider{gateProvider{name: "p", slow: true, release: release}}
	b := &gateProvider{name: "b", release: release}
	var targets []Target
	for _, g := range []providers.Provider{p, b} {
		targets = append(targets, Target{Provider: g, Guard: resilience.NewGuard(resilience.GuardConfig{Provider: g.Name(),
			Retry: resilience.DefaultRetry(), Breaker: resilience.DefaultBreaker()})})
	}
	r := New(slog.New(slog.NewTextHandler(io.Discard, nil)), targets, WithClock(hedgeClock{fire: true}))
	r.Discover(context.Background(), 0)
	vm := chainVM("chat", StrategyFailover, "p/m", "b/m")
	vm.HedgeAfter = time.Second
	require.NoError(t, r.SetVirtualModels([]VirtualModel{vm}))
	var trace Trace
	resp, route, err := r.Chat(context.Background(), &pb.ChatCompletionRequest{Model: "chat"}, Call{Trace: &trace})
	require.NoError(t, err)
	require.Equal(t, "b", resp.GetModel(), "the backup won")
	require.Equal(t, Route{"b", "m"}, route)
	require.True(t, trace.Hedged)
	require.Equal(t, []CutUsage{{Route: Route{"p", "m"}, PromptTokens: 100, CompletionTokens: 7}}, trace.Lost)
}

// TestAHedgeLoserOfAnyEndpointIsBilled: the losing side's usage is read by the
// endpoint's own AnswerUsage (an embeddings answer, an Anthropic message), not
// only from a chat completion: before, a hedged embeddings or /v1/messages
// call's loser that answered anyway was never billed.
func TestAHedgeLoserOfAnyEndpointIsBilled(t *testing.T) {
	t.Parallel()
	type answer struct {
		from   string
		prompt int64
	}
	r := hedgedPair(t, "emb")
	var trace Trace
	call := Call{Trace: &trace, AnswerUsage: func(a any) (Usage, bool) {
		return Usage{Prompt: a.(answer).prompt}, true
	}}
	won := make(chan struct{})
	got, route, err := Unary(r, context.Background(), "emb", call, func(ctx context.Context, t Target, _ providers.Attempt) (answer, error) {
		if t.Provider.Name() == "p" { // the primary: slow, answers anyway once the backup won
			<-ctx.Done()
			<-won
			return answer{"p", 40}, nil
		}
		defer close(won)
		return answer{"b", 12}, nil
	})
	require.NoError(t, err)
	require.Equal(t, "b", got.from)
	require.Equal(t, Route{"b", "m"}, route)
	require.Equal(t, []CutUsage{{Route: Route{"p", "m"}, PromptTokens: 40}}, trace.Lost)
}

// TestAHedgeLoserThatDoesNotSayIsBilledItsPrompt: a losing side that answered
// but does not say what it used (a stream cancelled after its first content,
// before its usage) is billed the request's prompt estimate, marked estimated;
// without an estimate it is not billed.
func TestAHedgeLoserThatDoesNotSayIsBilledItsPrompt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		estPrompt int
		want      []CutUsage
	}{
		{"with an estimate", 25, []CutUsage{{Route: Route{"p", "m"}, PromptTokens: 25, Estimated: true}}},
		{"without one", 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := hedgedPair(t, "chat")
			var trace Trace
			call := Call{Trace: &trace, EstPrompt: tc.estPrompt, AnswerUsage: func(any) (Usage, bool) { return Usage{}, false }}
			won := make(chan struct{})
			got, _, err := Unary(r, context.Background(), "chat", call, func(ctx context.Context, t Target, _ providers.Attempt) (string, error) {
				if t.Provider.Name() == "p" {
					<-ctx.Done()
					<-won
					return "p", nil
				}
				defer close(won)
				return "b", nil
			})
			require.NoError(t, err)
			require.Equal(t, "b", got)
			require.Equal(t, tc.want, trace.Lost)
		})
	}
}

// hedgedPair is a router with virtual model source: targets p/m then b/m, the
// backup started at once (the hedge timer fires as it is set).
func hedgedPair(t *testing.T, source string) *Router {
	t.Helper()
	var targets []Target
	for _, name := range []string{"p", "b"} {
		targets = append(targets, Target{Provider: &gateProvider{name: name}, Guard: resilience.NewGuard(resilience.GuardConfig{Provider: name,
			Retry: resilience.DefaultRetry(), Breaker: resilience.DefaultBreaker()})})
	}
	r := New(slog.New(slog.NewTextHandler(io.Discard, nil)), targets, WithClock(hedgeClock{fire: true}))
	r.Discover(context.Background(), 0)
	vm := chainVM(source, StrategyFailover, "p/m", "b/m")
	vm.HedgeAfter = time.Second
	require.NoError(t, r.SetVirtualModels([]VirtualModel{vm}))
	return r
}

// TestAnAnswerInWhenTheTimerFiresIsTaken: a primary's result already in when
// the hedge timer fires is the call's answer, every time: no backup starts.
func TestAnAnswerInWhenTheTimerFiresIsTaken(t *testing.T) {
	t.Parallel()
	fired := make(chan struct{})
	close(fired)
	for range 200 {
		results := make(chan racer[int], 1)
		results <- racer[int]{v: 7}
		res, ok := awaitPrimary(results, fired)
		require.True(t, ok, "the answer in hand is taken")
		require.Equal(t, 7, res.v)
	}
	_, ok := awaitPrimary(make(chan racer[int], 1), fired)
	require.False(t, ok, "no answer yet: the timer starts the backup")
}
