package redisstate

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/internal/redistest"
	"github.com/switchyard/switchyard/keys"
	"github.com/switchyard/switchyard/providers/simulator"
	"github.com/switchyard/switchyard/resilience"
	"github.com/switchyard/switchyard/router"
)

// replica is one Switchyard's shared-state side: a router with providers a and b,
// its virtual models, breakers and key registry following Redis.
type replica struct {
	c    *Client
	rt   *router.Router
	vms  *VirtualModels
	brk  *Breakers
	keys *keys.Registry
}

func newReplica(t *testing.T, s *redistest.Server, resync time.Duration) *replica {
	t.Helper()
	c, err := Open(Config{URL: s.URL(), Prefix: "t:" + t.Name() + ":", ResyncInterval: resync})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	var targets []router.Target
	for _, name := range []string{"a", "b"} {
		targets = append(targets, router.Target{Provider: simulator.New(simulator.Config{Name: name}),
			Guard: resilience.NewGuard(resilience.GuardConfig{Provider: name, Retry: resilience.DefaultRetry(),
				Breaker: resilience.DefaultBreaker()})})
	}
	rt := router.New(slog.New(slog.DiscardHandler), targets)
	rt.Discover(context.Background(), time.Second)
	r := &replica{c: c, rt: rt, vms: NewVirtualModels(c, rt, config.Failover{}), brk: NewBreakers(c, rt)}
	ks := NewKeys(c)
	stop := c.Start(context.Background())
	t.Cleanup(stop)
	r.keys, err = keys.NewRegistry(context.Background(), ks, nil, nil)
	require.NoError(t, err)
	t.Cleanup(r.keys.Close)
	ok, detail := c.Ready()
	require.True(t, ok, detail)
	return r
}

// upsert makes a virtual model through the router as the admin API does.
func (r *replica) upsert(t *testing.T, source string, targets ...string) error {
	t.Helper()
	spec := config.VirtualModel{Source: source}
	for _, m := range targets {
		spec.Targets = append(spec.Targets, config.Target{Model: m})
	}
	return r.rt.UpsertVirtualModel(router.FromConfig(config.Failover{}, spec, false), r.persist)
}

func (r *replica) persist(vms []router.VirtualModel) error {
	specs := make([]config.VirtualModel, 0, len(vms))
	for _, vm := range vms {
		specs = append(specs, vm.Spec)
	}
	return r.vms.Persist(specs)
}

func targetsOf(r *replica, source string) []string {
	vm, err := r.rt.VirtualModel(source)
	if err != nil {
		return nil
	}
	var out []string
	for _, t := range vm.Targets {
		out = append(out, t.Model)
	}
	return out
}

const within = time.Second // the bound for a change to reach every replica

// TestVirtualModelsReachEveryReplica: an upsert, a replacement and a delete on
// one replica are in force on the other within a second (pub/sub, not the
// resync: its interval here is an hour); two replicas changing different virtual
// models at once keep both.
func TestVirtualModelsReachEveryReplica(t *testing.T) {
	t.Parallel()
	s := redistest.New(t)
	r1, r2 := newReplica(t, s, time.Hour), newReplica(t, s, time.Hour)

	require.NoError(t, r1.upsert(t, "smart", "a/sim-1", "b/sim-1"))
	require.Eventually(t, func() bool { return len(targetsOf(r2, "smart")) == 2 }, within, 10*time.Millisecond)
	require.NoError(t, r2.upsert(t, "smart", "b/sim-1"))
	require.Eventually(t, func() bool { return len(targetsOf(r1, "smart")) == 1 }, within, 10*time.Millisecond)

	require.NoError(t, r1.upsert(t, "one", "a/sim-1"))
	require.NoError(t, r2.upsert(t, "two", "b/sim-1"))
	require.Eventually(t, func() bool {
		return targetsOf(r1, "two") != nil && targetsOf(r2, "one") != nil && targetsOf(r1, "smart") != nil
	}, within, 10*time.Millisecond, "changes to different virtual models do not overwrite each other")

	require.NoError(t, r2.rt.DeleteVirtualModel("smart", r2.persist))
	require.Eventually(t, func() bool { return targetsOf(r1, "smart") == nil }, within, 10*time.Millisecond)
}

// TestAMissedChangeHealsAtTheResync: a change written while a replica was not
// listening (here: written straight into Redis, no message) is applied by the
// periodic resync.
func TestAMissedChangeHealsAtTheResync(t *testing.T) {
	t.Parallel()
	s := redistest.New(t)
	r1 := newReplica(t, s, 200*time.Millisecond)
	spec := encodeSpec(config.VirtualModel{Source: "quiet", Targets: []config.Target{{Model: "a/sim-1"}}})
	require.NoError(t, r1.c.Redis().HSet(context.Background(), r1.vms.hash(), "quiet", spec).Err())
	require.Eventually(t, func() bool { return targetsOf(r1, "quiet") != nil }, 2*time.Second, 20*time.Millisecond)
}

// TestAdminBreakerTripsAndResetsReachEveryReplica: a trip on one replica opens
// the breaker on the other for what is left of its duration; a reset closes it.
func TestAdminBreakerTripsAndResetsReachEveryReplica(t *testing.T) {
	t.Parallel()
	s := redistest.New(t)
	r1, r2 := newReplica(t, s, time.Hour), newReplica(t, s, time.Hour)
	state := func(r *replica) resilience.State {
		for _, e := range r.rt.Breakers() {
			if e.Provider == "a" {
				return e.State
			}
		}
		return resilience.Closed
	}
	ctx := context.Background()
	require.NoError(t, r1.brk.Trip(ctx, "a", "", time.Minute))
	_, err := r1.rt.TripBreaker("a", "", time.Minute)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return state(r2) == resilience.Open }, within, 10*time.Millisecond)

	require.NoError(t, r2.brk.Reset(ctx, "a", ""))
	_, err = r2.rt.ResetBreaker("a", "")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return state(r1) == resilience.Closed }, within, 10*time.Millisecond)

	// A replica starting later takes the trips still in force, not old resets.
	require.NoError(t, r1.brk.Trip(ctx, "b", "", time.Minute))
	r3 := newReplica(t, s, time.Hour)
	for _, e := range r3.rt.Breakers() {
		if e.Provider == "b" {
			require.Equal(t, resilience.Open, e.State)
		}
	}
	_, err = r1.rt.TripBreaker("nope", "", 0)
	require.ErrorIs(t, err, router.ErrUnknownProvider)
	require.ErrorIs(t, r1.brk.Trip(ctx, "nope", "", 0), router.ErrUnknownProvider, "nothing stored for an unknown provider")
}

// With provider scope every model names the provider's one breaker: a trip
// named with a model and a reset named without are two actions on one breaker,
// stored as one, so that a replica starting later does not open the breaker an
// admin closed (stored under two names, it applied the older trip).
func TestABreakersActionsAreStoredUnderItsOwnName(t *testing.T) {
	t.Parallel()
	s := redistest.New(t)
	ctx := context.Background()
	r1 := newReplica(t, s, time.Hour)
	require.NoError(t, r1.brk.Trip(ctx, "a", "sim-1", time.Minute))
	_, err := r1.rt.TripBreaker("a", "sim-1", time.Minute)
	require.NoError(t, err)
	require.NoError(t, r1.brk.Reset(ctx, "a", ""))
	_, err = r1.rt.ResetBreaker("a", "")
	require.NoError(t, err)
	r2 := newReplica(t, s, time.Hour)
	for _, r := range []*replica{r1, r2} {
		for _, e := range r.rt.Breakers() {
			require.Equal(t, resilience.Closed, e.State, "%s/%s", e.Provider, e.Model)
		}
	}
	stored, err := r1.c.Redis().HKeys(ctx, "t:"+t.Name()+":breakers").Result()
	require.NoError(t, err)
	require.Equal(t, []string{"a/"}, stored)
}

// TestKeysReachEveryReplica: a key made on one replica authenticates on the
// other within a second; revoked there, it is refused on the first.
func TestKeysReachEveryReplica(t *testing.T) {
	t.Parallel()
	s := redistest.New(t)
	r1, r2 := newReplica(t, s, time.Hour), newReplica(t, s, time.Hour)
	ctx := context.Background()
	k, secret, err := r1.keys.Create(ctx, keys.Spec{Name: "svc", Models: []string{"*"}})
	require.NoError(t, err)
	_, err = r1.keys.Authenticate(secret)
	require.NoError(t, err, "at once on the replica that made it")
	require.Eventually(t, func() bool { _, err := r2.keys.Authenticate(secret); return err == nil }, within, 10*time.Millisecond)
	_, err = r2.keys.Revoke(ctx, k.ID)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := r1.keys.Authenticate(secret)
		return err != nil
	}, within, 10*time.Millisecond)
	_, err = r1.keys.Authenticate(secret)
	require.ErrorIs(t, err, keys.ErrRevoked)
}

// TestOutageKeepsTheLastKnownStateAndRefusesChanges: with Redis gone, keys and
// virtual models keep working from memory, changes are refused (503: they could
// not reach the other replicas), readiness says so; when Redis is back, changes
// work again and the replica resyncs.
func TestOutageKeepsTheLastKnownStateAndRefusesChanges(t *testing.T) {
	t.Parallel()
	s := redistest.New(t)
	r1 := newReplica(t, s, 200*time.Millisecond)
	ctx := context.Background()
	_, secret, err := r1.keys.Create(ctx, keys.Spec{Name: "svc", Models: []string{"*"}})
	require.NoError(t, err)
	require.NoError(t, r1.upsert(t, "smart", "a/sim-1"))

	s.Stop()
	require.Eventually(t, func() bool { return !r1.c.Up() }, 3*time.Second, 20*time.Millisecond, "the resync notices")
	ok, detail := r1.c.Ready()
	require.True(t, ok, "an outage after the first load keeps the replica ready")
	require.Contains(t, detail, "redis unreachable since")
	_, err = r1.keys.Authenticate(secret)
	require.NoError(t, err, "last known keys")
	require.NotNil(t, targetsOf(r1, "smart"), "last known virtual models")
	err = r1.upsert(t, "other", "b/sim-1")
	require.ErrorIs(t, err, ErrUnavailable)
	require.Nil(t, targetsOf(r1, "other"), "a change that could not be shared is not made here either")
	start := time.Now()
	require.ErrorIs(t, r1.brk.Trip(ctx, "a", "", time.Minute), ErrUnavailable)
	require.Less(t, time.Since(start), 2*time.Second, "no hang")

	s.Start()
	require.Eventually(t, func() bool { return r1.c.Up() }, 5*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool { return r1.upsert(t, "other", "b/sim-1") == nil }, 5*time.Second, 50*time.Millisecond)
	_, detail = r1.c.Ready()
	require.Equal(t, "redis ok", detail)
}

// TestStartWithRedisDown: a replica started while Redis is down starts (no
// crash), is not ready, and loads the shared state as soon as Redis answers.
func TestStartWithRedisDown(t *testing.T) {
	t.Parallel()
	s := redistest.New(t)
	r1 := newReplica(t, s, time.Hour)
	_, secret, err := r1.keys.Create(context.Background(), keys.Spec{Name: "svc", Models: []string{"*"}})
	require.NoError(t, err)
	s.Stop()

	c, err := Open(Config{URL: s.URL(), Prefix: "t:" + t.Name() + ":", ResyncInterval: time.Hour})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	ks := NewKeys(c)
	start := time.Now()
	stop := c.Start(context.Background())
	t.Cleanup(stop)
	reg, err := keys.NewRegistry(context.Background(), ks, nil, nil)
	require.NoError(t, err, "start-up does not fail on a Redis outage")
	t.Cleanup(reg.Close)
	require.Less(t, time.Since(start), 3*time.Second, "no hang")
	ok, detail := c.Ready()
	require.False(t, ok)
	require.Contains(t, detail, "not loaded yet")

	s.Start()
	require.Eventually(t, func() bool { ok, _ := c.Ready(); return ok }, 5*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool { _, err := reg.Authenticate(secret); return err == nil }, 5*time.Second, 20*time.Millisecond,
		"the keys are loaded once Redis answers")
}

// TestApplyNeverUndoesALocalChange: with reloads running all the time on real
// Redis, every change made is in force when it returns. A smoke test: the race
// it guards against has a window of microseconds and is rarely hit here; the
// ordering itself is proven deterministically by the router's
// TestReconcileIsOneStepWithAdminChanges and the keys'
// TestAnOlderReloadNeverHidesANewKey (both fail without it).
func TestApplyNeverUndoesALocalChange(t *testing.T) {
	t.Parallel()
	s := redistest.New(t)
	r1 := newReplica(t, s, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			_ = r1.vms.Apply(ctx)
		}
	}()
	k := make(chan struct{})
	go func() {
		defer close(k)
		for ctx.Err() == nil {
			_ = r1.keys.Reload(ctx)
		}
	}()
	for i := range 40 {
		source := fmt.Sprintf("m%d", i)
		require.NoError(t, r1.upsert(t, source, "a/sim-1"))
		require.NotNil(t, targetsOf(r1, source), "a change made is in force at once")
		_, secret, err := r1.keys.Create(ctx, keys.Spec{Name: source, Models: []string{"*"}})
		require.NoError(t, err)
		_, err = r1.keys.Authenticate(secret)
		require.NoError(t, err, "a key made authenticates at once")
	}
	cancel()
	<-done
	<-k
}

// A replica whose index has not yet heard another's change (the notice still on
// its way, or its subscription down until the resync) changes the key as Redis
// holds it, not as it last heard of it: a revocation made elsewhere is never
// undone, and two replicas changing different fields both keep theirs.
func TestAKeyChangeOnAStaleReplicaKeepsTheOthers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// stale is a registry on the same Redis that follows no notices: its index
	// is what it read last.
	stale := func(t *testing.T, s *redistest.Server) *keys.Registry {
		c, err := Open(Config{URL: s.URL(), Prefix: "t:" + t.Name() + ":"})
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		reg, err := keys.NewRegistry(ctx, NewKeys(c), nil, nil)
		require.NoError(t, err)
		t.Cleanup(reg.Close)
		return reg
	}
	// setup is a replica that made a key and a stale one that has read it.
	setup := func(t *testing.T) (*replica, *keys.Registry, keys.Key, string) {
		s := redistest.New(t)
		a, b := newReplica(t, s, time.Hour), stale(t, s)
		k, secret, err := a.keys.Create(ctx, keys.Spec{Name: "svc", Models: []string{"*"}})
		require.NoError(t, err)
		require.NoError(t, b.Reload(ctx))
		return a, b, k, secret
	}
	t.Run("a revocation stands", func(t *testing.T) {
		a, b, k, secret := setup(t)
		_, err := a.keys.Revoke(ctx, k.ID)
		require.NoError(t, err)
		_, err = b.Update(ctx, k.ID, func(sp *keys.Spec) error { sp.Name = "renamed"; return nil })
		require.ErrorIs(t, err, keys.ErrRevoked, "the stale replica's change is refused as Redis holds the key")
		require.NoError(t, a.keys.Reload(ctx))
		_, err = a.keys.Authenticate(secret)
		require.ErrorIs(t, err, keys.ErrRevoked)
		got, err := a.keys.Get(k.ID)
		require.NoError(t, err)
		require.Equal(t, "svc", got.Name)
	})
	t.Run("both fields are kept", func(t *testing.T) {
		a, b, k, _ := setup(t)
		_, err := a.keys.Update(ctx, k.ID, func(sp *keys.Spec) error { sp.Name = "renamed"; return nil })
		require.NoError(t, err)
		got, err := b.Update(ctx, k.ID, func(sp *keys.Spec) error { sp.Limits.RPM = 7; return nil })
		require.NoError(t, err)
		require.Equal(t, "renamed", got.Name, "the other replica's rename")
		require.Equal(t, 7, got.Limits.RPM)
	})
	t.Run("racing changes all land", func(t *testing.T) {
		a, b, k, _ := setup(t)
		var wg sync.WaitGroup
		for i := range 20 {
			reg := a.keys
			if i%2 == 1 {
				reg = b
			}
			wg.Go(func() {
				_, err := reg.Update(ctx, k.ID, func(sp *keys.Spec) error {
					sp.Models = append(sp.Models, fmt.Sprintf("m%d", i))
					return nil
				})
				assert.NoError(t, err)
			})
		}
		wg.Wait()
		require.NoError(t, a.keys.Reload(ctx))
		got, err := a.keys.Get(k.ID)
		require.NoError(t, err)
		require.Len(t, got.Models, 21, "no change wrote over another: %v", got.Models)
	})
}

// A change whose record others keep writing under it is contention, not a
// Redis outage (Redis answered every command): it is refused with
// keys.ErrContended, nothing changed, and the replica stays up (down, limits
// would follow on_error: deny refused every limited call).
func TestContentionOnAKeyIsNotAnOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := redistest.New(t)
	a := newReplica(t, s, time.Hour)
	k, _, err := a.keys.Create(ctx, keys.Spec{Name: "svc", Models: []string{"*"}})
	require.NoError(t, err)
	other, err := Open(Config{URL: s.URL(), Prefix: "t:" + t.Name() + ":"})
	require.NoError(t, err)
	t.Cleanup(func() { other.Close() })
	ks := NewKeys(a.c)
	tries := 0
	_, err = ks.Change(ctx, k.ID, func(key *keys.Key) error {
		tries++
		// another replica writes the record between this read and its write
		raw, err := other.rdb.HGet(ctx, ks.hash(), k.ID).Result()
		require.NoError(t, err)
		require.NoError(t, other.rdb.HSet(ctx, ks.hash(), k.ID, raw).Err())
		key.Name = fmt.Sprintf("try%d", tries)
		return nil
	})
	require.ErrorIs(t, err, keys.ErrContended)
	require.Equal(t, maxChangeTries, tries)
	require.True(t, a.c.Up(), "Redis answered every command")
	got, err := ks.List(ctx)
	require.NoError(t, err)
	require.Equal(t, "svc", got[0].Name, "nothing changed")
}
