package router

import (
	"context"
	"errors"
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
}

func (l *fullLimiter) Admit(_ context.Context, model string, est int) (func(int), error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.est = append(l.est, est)
	if l.full {
		return nil, &SaturatedError{Provider: "a", Model: model, Limit: "requests", RetryAfter: time.Second}
	}
	l.admit++
	return func(n int) { l.mu.Lock(); l.used = append(l.used, n); l.mu.Unlock() }, nil
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
