package redisstate

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/redistest"
	"github.com/switchyard/switchyard/internal/testutil"
	"github.com/switchyard/switchyard/limits"
)

// fakeClock is a clock tests move by hand.
type fakeClock = testutil.Clock

func newClock() *fakeClock { return testutil.NewClock(time.Date(2026, 1, 1, 0, 0, 50, 0, time.UTC)) }

func open(t *testing.T, s *redistest.Server, onError string) *Client {
	t.Helper()
	c, err := Open(Config{URL: s.URL(), OnError: onError, Prefix: "t:" + t.Name() + ":"})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func admitN(t *testing.T, l *limits.Limiter, lim limits.Limits, n, tokens int) int {
	t.Helper()
	ok := 0
	for range n {
		g, err := l.Admit(context.Background(), "key:k1", lim, tokens)
		if err != nil {
			require.ErrorIs(t, err, limits.ErrLimited)
			continue
		}
		ok++
		require.NoError(t, g.Done(0))
	}
	return ok
}

// TestRedisLimitsAgreeWithMemory: the Lua script is the same GCRA as the
// embedded backend: window edges, refill, tpm weights, on a fake clock.
func TestRedisLimitsAgreeWithMemory(t *testing.T) {
	t.Parallel()
	s := redistest.New(t)
	tests := []struct {
		name   string
		lim    limits.Limits
		tokens int
		gap    time.Duration
	}{
		{"rpm one second later", limits.Limits{RPM: 10}, 0, time.Second},
		{"rpm at the old window's edge", limits.Limits{RPM: 10}, 0, 59 * time.Second},
		{"rpm half a minute later", limits.Limits{RPM: 10}, 0, 30 * time.Second},
		{"rpm a full period later", limits.Limits{RPM: 10}, 0, time.Minute},
		{"tpm weights", limits.Limits{TPM: 1000}, 300, 20 * time.Second},
		{"rpm and tpm", limits.Limits{RPM: 5, TPM: 1000}, 150, 15 * time.Second},
		// Above 60M a minute a unit takes less than a microsecond: 0.4 µs at
		// 150M (an OpenAI tier-5 account), 0.06 µs at 1G.
		{"tpm above 60M", limits.Limits{TPM: 150_000_000}, 10_000_000, 20 * time.Second},
		{"tpm of 1G", limits.Limits{TPM: 1_000_000_000}, 100_000_000, 12 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clkR, clkM := newClock(), newClock()
			red := limits.New(NewLimits(open(t, s, Allow)).WithCallerClock(), clkR)
			mem := limits.New(limits.NewMemory(), clkM)
			first := admitN(t, mem, tt.lim, 20, tt.tokens)
			require.Equal(t, first, admitN(t, red, tt.lim, 20, tt.tokens), "first burst")
			clkR.Advance(tt.gap)
			clkM.Advance(tt.gap)
			second := admitN(t, mem, tt.lim, 20, tt.tokens)
			require.Equal(t, second, admitN(t, red, tt.lim, 20, tt.tokens), "after %s", tt.gap)
		})
	}
}

// TestRedisLimitHoldsAcrossReplicas: three replicas (three clients) admitting
// concurrently on one subject with rpm 20 admit exactly 20 together; the state
// and the lease set expire on their own.
func TestRedisLimitHoldsAcrossReplicas(t *testing.T) {
	t.Parallel()
	s := redistest.New(t)
	var replicas []*limits.Limiter
	var clients []*Client
	for range 3 {
		c := open(t, s, Allow)
		clients = append(clients, c)
		replicas = append(replicas, limits.New(NewLimits(c), nil))
	}
	lim := limits.Limits{RPM: 20, MaxConcurrency: 100}
	var admitted atomic.Int32
	var wg sync.WaitGroup
	for i := range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g, err := replicas[i%3].Admit(context.Background(), "key:shared", lim, 0)
			if err == nil {
				admitted.Add(1)
				require.NoError(t, g.Done(0))
				return
			}
			var ex *limits.ExceededError
			require.ErrorAs(t, err, &ex)
			require.Equal(t, limits.Requests, ex.Limit)
			require.Positive(t, ex.RetryAfter)
		}()
	}
	wg.Wait()
	require.Equal(t, int32(20), admitted.Load())
	rdb := clients[0].Redis()
	base := clients[0].key("lim", "{key:shared}")
	ttl, err := rdb.PTTL(context.Background(), base).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 59*time.Second, "the state lives until the limit is full again")
	require.LessOrEqual(t, ttl, 62*time.Second)
	n, err := rdb.ZCard(context.Background(), base+":c").Result()
	require.NoError(t, err)
	require.Zero(t, n, "every lease was released")
}

// TestRedisConcurrencyAndTokenCorrection: a slot is held until Done, Done's
// usage corrects the tpm charge, Undo gives the request back.
func TestRedisConcurrencyAndTokenCorrection(t *testing.T) {
	t.Parallel()
	s := redistest.New(t)
	clk := newClock()
	l := limits.New(NewLimits(open(t, s, Allow)).WithCallerClock(), clk)
	ctx := context.Background()

	conc := limits.Limits{MaxConcurrency: 2}
	g1, err := l.Admit(ctx, "c", conc, 0)
	require.NoError(t, err)
	_, err = l.Admit(ctx, "c", conc, 0)
	require.NoError(t, err)
	_, err = l.Admit(ctx, "c", conc, 0)
	var ex *limits.ExceededError
	require.ErrorAs(t, err, &ex)
	require.Equal(t, limits.Concurrency, ex.Limit)
	require.NoError(t, g1.Done(0))
	_, err = l.Admit(ctx, "c", conc, 0)
	require.NoError(t, err, "the released slot is free again")

	tpm := limits.Limits{TPM: 1000}
	g, err := l.Admit(ctx, "t", tpm, 900)
	require.NoError(t, err)
	require.Equal(t, 100, g.Tokens.Remaining)
	require.NoError(t, g.Done(100)) // used 100 of the 900 estimated: 800 back
	g, err = l.Admit(ctx, "t", tpm, 800)
	require.NoError(t, err, "the correction gave the tokens back")
	require.Equal(t, 100, g.Tokens.Remaining)

	rpm := limits.Limits{RPM: 1}
	g, err = l.Admit(ctx, "u", rpm, 0)
	require.NoError(t, err)
	require.NoError(t, g.Undo())
	_, err = l.Admit(ctx, "u", rpm, 0)
	require.NoError(t, err, "an undone call gave its request back")
}

// TestRedisOutageFollowsThePolicy: with Redis gone, allow decides with local
// counters (the limit still holds on this replica), deny refuses with a 1s wait;
// neither waits long; when Redis is back the shared counters are used again.
func TestRedisOutageFollowsThePolicy(t *testing.T) {
	t.Parallel()
	for _, policy := range []string{Allow, Deny} {
		t.Run(policy, func(t *testing.T) {
			t.Parallel()
			s := redistest.New(t)
			c := open(t, s, policy)
			l := limits.New(NewLimits(c), nil)
			lim := limits.Limits{RPM: 3}
			ctx := context.Background()
			_, err := l.Admit(ctx, "o", lim, 0)
			require.NoError(t, err)
			require.True(t, c.Up())

			s.Stop()
			start := time.Now()
			var ok, refused int
			for range 5 {
				g, err := l.Admit(ctx, "o", lim, 0)
				if err == nil {
					ok++
					require.NoError(t, g.Done(0))
					continue
				}
				var ex *limits.ExceededError
				require.ErrorAs(t, err, &ex, "an outage is a decision, not an error")
				refused++
				if policy == Deny {
					require.Equal(t, time.Second, ex.RetryAfter)
				}
			}
			require.Less(t, time.Since(start), 2*time.Second, "no hang")
			require.False(t, c.Up())
			if policy == Allow {
				require.Equal(t, 3, ok, "local counters: rpm 3 on this replica")
			} else {
				require.Equal(t, 5, refused)
			}
			ready, detail := c.Ready()
			require.False(t, ready, "never loaded")
			require.Contains(t, detail, "redis unreachable")

			s.Start()
			require.Eventually(t, func() bool {
				_, err := l.Admit(ctx, "o", lim, 0)
				return err == nil && c.Up()
			}, 5*time.Second, 50*time.Millisecond, "recovery is automatic")
		})
	}
}

// TestReleaseWithNothingToGiveBackCostsNoRoundTrip: an rpm-only call whose answer
// used what was estimated needs no release in Redis (one round trip per request).
func TestReleaseWithNothingToGiveBackCostsNoRoundTrip(t *testing.T) {
	t.Parallel()
	s := redistest.New(t)
	c := open(t, s, Allow)
	l := limits.New(NewLimits(c), nil)
	g, err := l.Admit(context.Background(), "n", limits.Limits{RPM: 10}, 0)
	require.NoError(t, err)
	s.Stop() // a round trip now would fail
	require.NoError(t, g.Done(0))
	require.True(t, c.Up(), "no Redis call was made")
}

// TestAReleaseDuringAnOutageIsRetried: a call that ends while Redis is down
// gives its concurrency slot back once Redis returns, not after LeaseTTL.
func TestAReleaseDuringAnOutageIsRetried(t *testing.T) {
	t.Parallel()
	s := redistest.New(t)
	c := open(t, s, Deny)
	l := limits.New(NewLimits(c), nil)
	lim := limits.Limits{MaxConcurrency: 1}
	g, err := l.Admit(context.Background(), "r", lim, 0)
	require.NoError(t, err)
	s.Stop()
	require.Error(t, g.Done(0), "Redis is down")
	s.Start()
	require.Eventually(t, func() bool {
		g, err := l.Admit(context.Background(), "r", lim, 0)
		if err != nil {
			return false
		}
		require.NoError(t, g.Done(0))
		return true
	}, 5*time.Second, 50*time.Millisecond, "the slot came back with Redis")
}

// A caller whose own context ends during a Redis call (it left, or its deadline
// passed: a gRPC client's short grpc-timeout) is not a Redis outage: the
// replica stays up and the next caller is decided by Redis, not refused by the
// on_error policy.
func TestACallersOwnDeadlineIsNotAnOutage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		ended func() context.Context
	}{
		{"deadline passed", func() context.Context {
			ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
			t.Cleanup(cancel)
			return ctx
		}},
		{"caller left", func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := redistest.New(t)
			c := open(t, s, Deny)
			l := limits.New(NewLimits(c), nil)
			lim := limits.Limits{RPM: 1000, MaxConcurrency: 10}
			_, err := l.Admit(tc.ended(), "key:a", lim, 0)
			require.Error(t, err)
			require.True(t, c.Up(), "the caller's context is not Redis's health")
			g, err := l.Admit(context.Background(), "key:b", lim, 0)
			require.NoError(t, err, "the next caller is decided by Redis, not by on_error: deny")
			require.NoError(t, g.Done(0))
		})
	}
}

// TestALimitsStateExpiresOnItsOwn: whatever a subject's limits, every key the
// admission writes expires by itself, so a replica that dies mid-call (no
// release) leaves nothing in Redis for good.
func TestALimitsStateExpiresOnItsOwn(t *testing.T) {
	t.Parallel()
	s := redistest.New(t)
	for _, tc := range []struct {
		name   string
		lim    limits.Limits
		tokens int
		keys   int // what the admission stores: the rates' hash when it charged something, the leases
	}{
		{"concurrency only", limits.Limits{MaxConcurrency: 2}, 100, 1},
		{"tpm, a call of no tokens", limits.Limits{TPM: 1000}, 0, 0},
		{"rpm and concurrency", limits.Limits{RPM: 10, MaxConcurrency: 2}, 0, 2},
		{"all three", limits.Limits{RPM: 10, TPM: 1000, MaxConcurrency: 2}, 50, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := open(t, s, Allow)
			l := limits.New(NewLimits(c), nil)
			_, err := l.Admit(context.Background(), "key:a", tc.lim, tc.tokens) // never released
			require.NoError(t, err)
			ctx := context.Background()
			stored, err := c.Redis().Keys(ctx, "t:"+t.Name()+":*").Result()
			require.NoError(t, err)
			require.Len(t, stored, tc.keys, "%v", stored)
			for _, k := range stored {
				ttl, err := c.Redis().PTTL(ctx, k).Result()
				require.NoError(t, err)
				require.Positive(t, ttl, "%s has no expiry", k)
			}
		})
	}
}

// A release whose answer came after the client's timeout was taken all the
// same: it must not be taken twice. One with a lease is retried, and the retry
// finds the lease gone; a correction without one is not retried.
func TestAReleaseWhoseAnswerWasLostIsTakenOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		lim  limits.Limits
	}{
		{"with a lease", limits.Limits{TPM: 1000, MaxConcurrency: 5}},
		{"without a lease", limits.Limits{TPM: 1000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := redistest.New(t)
			c, slow := slowAnswers(t, s, Allow)
			b := NewLimits(c).WithCallerClock()
			l := limits.New(b, newClock())
			ctx := context.Background()
			g, err := l.Admit(ctx, "r", tc.lim, 0)
			require.NoError(t, err)
			require.NoError(t, g.Done(1), "the scripts are loaded before the answers slow down")

			g, err = l.Admit(ctx, "r", tc.lim, 500)
			require.NoError(t, err)
			slow.Store(true)
			require.Error(t, g.Done(100), "the answer came too late: 400 back, taken by Redis all the same")
			slow.Store(false)
			require.Eventually(t, func() bool { return b.pending.Load() == 0 && !c.health.skip() }, 10*time.Second, 10*time.Millisecond,
				"the retry, if any, is done, and Redis is asked again")
			_, err = l.Admit(ctx, "r", tc.lim, 950)
			var ex *limits.ExceededError
			require.ErrorAs(t, err, &ex, "101 used: 950 more is over 1000 (taken twice, the correction gave back 800)")
			require.Equal(t, limits.Tokens, ex.Limit)
			_, err = l.Admit(ctx, "r", tc.lim, 899)
			require.NoError(t, err, "101 used: 899 more fits")
		})
	}
}

// An admit whose answer came after the client's timeout ran in Redis all the
// same: the lease it added is given back once Redis answers again, instead of
// holding a concurrency slot for LeaseTTL.
func TestAnAdmitWhoseAnswerWasLostHoldsNoSlot(t *testing.T) {
	t.Parallel()
	s := redistest.New(t)
	c, slow := slowAnswers(t, s, Allow)
	b := NewLimits(c).WithCallerClock()
	l := limits.New(b, newClock())
	ctx := context.Background()
	lim := limits.Limits{MaxConcurrency: 2}
	g, err := l.Admit(ctx, "a", lim, 0)
	require.NoError(t, err)
	require.NoError(t, g.Done(0), "the scripts are loaded before the answers slow down")

	slow.Store(true)
	g, err = l.Admit(ctx, "a", lim, 0) // Redis takes it; its answer comes too late: decided locally
	require.NoError(t, err)
	slow.Store(false)
	require.NoError(t, g.Done(0))
	require.Eventually(t, func() bool { return b.pending.Load() == 0 && !c.health.skip() }, 10*time.Second, 10*time.Millisecond,
		"the lost admit's lease is given back, and Redis is asked again")
	n, err := c.Redis().ZCard(ctx, b.keys("a")[1]).Result()
	require.NoError(t, err)
	require.Zero(t, n, "no lease is left")
	for range 2 {
		_, err := l.Admit(ctx, "a", lim, 0)
		require.NoError(t, err, "both slots are free")
	}
}
