package router

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/providers"
)

// fullLimiter refuses every call while full, and records what its admitted calls
// reported when they ended.
type fullLimiter struct {
	mu    sync.Mutex
	full  bool
	est   []int
	used  []int
	admit int
	// releaseErr is what done returns (a backend that could not take the room back).
	releaseErr error
}

func (l *fullLimiter) Admit(_ context.Context, model string, est int) (func(int) error, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.est = append(l.est, est)
	if l.full {
		return nil, &SaturatedError{Provider: "a", Model: model, Limit: "requests", RetryAfter: time.Second}
	}
	l.admit++
	return func(n int) error { l.mu.Lock(); l.used = append(l.used, n); l.mu.Unlock(); return l.releaseErr }, nil
}

func withLimiter(f *fixture, provider string, l TargetLimiter) {
	t := f.r.targets[provider]
	t.Limiter = l
	f.r.targets[provider] = t
}

func TestSaturatedTargetIsSkippedLikeAnOpenBreaker(t *testing.T) {
	t.Parallel()
	vm := chainVM("chat", StrategyFailover, "a/m1", "b/m1", "a/m2")
	vm.Failover.MaxAttempts = 1
	f := newFixture(t, vm)
	l := &fullLimiter{full: true}
	withLimiter(f, "a", l)
	f.b.errs["m1"] = []error{perr(503, "b down")}
	_, _, err := f.r.Chat(context.Background(), &pb.ChatCompletionRequest{Model: "chat"}, Call{EstTokens: 42})
	require.Error(t, err)
	require.Equal(t, []string{"b/m1"}, f.calls, "a was skipped at its limit: no upstream call, and not a backup attempt")
	require.Equal(t, []int{42}, l.est, "the limiter got the call's estimate")

	reqs, _, _ := f.r.health["a"].summary(time.Now())
	require.Zero(t, reqs, "a skip is not a request in a's health window")
}

func TestEverySaturatedTargetEndsInSaturatedError(t *testing.T) {
	t.Parallel()
	f := newFixture(t, chainVM("chat", StrategyFailover, "a/m1", "a/m2"))
	withLimiter(f, "a", &fullLimiter{full: true})
	_, _, err := f.r.Chat(context.Background(), &pb.ChatCompletionRequest{Model: "chat"}, Call{})
	var se *SaturatedError
	require.True(t, errors.As(err, &se), "got %v", err)
	require.ErrorIs(t, err, ErrTargetSaturated)
	require.Equal(t, time.Second, se.RetryAfter)
	require.Empty(t, f.calls)
}

func TestLimiterHearsHowACallEnded(t *testing.T) {
	t.Parallel()
	t.Run("unary reports its usage", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		l := &fullLimiter{}
		withLimiter(f, "a", l)
		_, _, err := Unary(f.r, context.Background(), "a/m1", Call{}, func(context.Context, Target, providers.Attempt) (*pb.ChatCompletion, error) {
			return &pb.ChatCompletion{Usage: &pb.Usage{TotalTokens: 17}}, nil
		})
		require.NoError(t, err)
		require.Equal(t, []int{17}, l.used)
	})
	t.Run("stream releases once, on close", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		l := &fullLimiter{}
		withLimiter(f, "a", l)
		s, _, err := f.r.Stream(context.Background(), &pb.ChatCompletionRequest{Model: "a/m1"}, Call{})
		require.NoError(t, err)
		require.Empty(t, l.used, "held while the stream is open")
		_, _ = s.Recv() // io.EOF: the end
		require.NoError(t, s.Close())
		require.Equal(t, []int{0}, l.used, "released exactly once")
	})
	t.Run("failed open releases", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		l := &fullLimiter{}
		withLimiter(f, "a", l)
		f.a.errs["m1"] = []error{perr(503, "down")}
		_, _, err := f.r.Stream(context.Background(), &pb.ChatCompletionRequest{Model: "a/m1"}, Call{})
		require.Error(t, err)
		require.Equal(t, []int{0}, l.used)
	})
}

// waitLimiter refuses every call, each model's limit freeing after its wait.
type waitLimiter map[string]time.Duration

func (l waitLimiter) Admit(_ context.Context, model string, _ int) (func(int) error, error) {
	return nil, &SaturatedError{Provider: "a", Model: model, Limit: "requests", RetryAfter: l[model]}
}

// A request whose every target is saturated is told the wait until the first
// of them frees, wherever it stands in the chain, not the last one's.
func TestEverySaturatedTargetGivesTheSoonestWait(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		waits map[string]time.Duration
		want  time.Duration
		model string
	}{
		{name: "first frees first", waits: map[string]time.Duration{"m1": 2 * time.Second, "m2": 40 * time.Second, "m3": 9 * time.Second}, want: 2 * time.Second, model: "m1"},
		{name: "middle frees first", waits: map[string]time.Duration{"m1": 30 * time.Second, "m2": 5 * time.Second, "m3": 20 * time.Second}, want: 5 * time.Second, model: "m2"},
		{name: "last frees first", waits: map[string]time.Duration{"m1": 30 * time.Second, "m2": 50 * time.Second, "m3": time.Second}, want: time.Second, model: "m3"},
		{name: "an unknown wait (a concurrency slot) may free at once", waits: map[string]time.Duration{"m1": 30 * time.Second, "m2": 0, "m3": 20 * time.Second}, want: 0, model: "m2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, chainVM("chat", StrategyFailover, "a/m1", "a/m2", "a/m3"))
			withLimiter(f, "a", waitLimiter(tc.waits))
			_, route, err := f.r.Chat(context.Background(), &pb.ChatCompletionRequest{Model: "chat"}, Call{})
			var se *SaturatedError
			require.True(t, errors.As(err, &se), "got %v", err)
			require.Equal(t, tc.want, se.RetryAfter)
			require.Equal(t, tc.model, se.Model)
			require.Equal(t, tc.model, route.Model, "the route reported is the one whose wait is told")
			require.Empty(t, f.calls)
		})
	}
}

// A limiter that cannot take a call's room back (its backend unreachable) is
// heard: the router logs it, naming the target and the request.
func TestAFailedTargetReleaseIsLogged(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var logs bytes.Buffer
	f.r.log = slog.New(slog.NewTextHandler(&logs, nil))
	withLimiter(f, "a", &fullLimiter{releaseErr: errors.New("redis unreachable")})
	_, _, err := Unary(f.r, context.Background(), "a/m1", Call{RequestID: "req-1"}, func(context.Context, Target, providers.Attempt) (*pb.ChatCompletion, error) {
		return &pb.ChatCompletion{}, nil
	})
	require.NoError(t, err, "the call is over either way")
	require.Contains(t, logs.String(), `msg="target limit release failed" provider=a model=m1 error="redis unreachable" request_id=req-1`)
}

// A call whose provider panics gives its target's room back before the panic
// goes on to the request's recovery: else a max_concurrency slot would be lost
// for good at each panic, until the account refused every call.
func TestAPanickingCallGivesItsTargetRoomBack(t *testing.T) {
	t.Parallel()
	kinds := map[string]func(f *fixture){
		"unary": func(f *fixture) {
			_, _, _ = Unary(f.r, context.Background(), "a/m1", Call{}, func(context.Context, Target, providers.Attempt) (*pb.ChatCompletion, error) {
				panic("provider bug")
			})
		},
		"stream": func(f *fixture) {
			_, _, _ = Streaming(f.r, context.Background(), "a/m1", Call{}, func(context.Context, Target, providers.Attempt) (providers.Stream, error) {
				panic("provider bug")
			}, nil, finished)
		},
	}
	for name, call := range kinds {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			l := &fullLimiter{}
			withLimiter(f, "a", l)
			require.PanicsWithValue(t, "provider bug", func() { call(f) })
			l.mu.Lock()
			defer l.mu.Unlock()
			require.Equal(t, 1, l.admit)
			require.Equal(t, []int{0}, l.used, "the room was given back, once")
		})
	}
}
