package router

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReconcileIsOneStepWithAdminChanges: an admin change waits while a
// reconcile runs, so the reconcile's reads and writes cannot straddle it; the
// reconcile's own changes are live when it returns.
func TestReconcileIsOneStepWithAdminChanges(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	inSync, release := make(chan struct{}), make(chan struct{})
	reconciled := make(chan error, 1)
	var seen []VirtualModel
	go func() {
		reconciled <- f.r.Reconcile(func(c VirtualModelChanges) error {
			close(inSync)
			<-release
			seen = c.List()
			return c.Upsert(chainVM("shared-made", StrategyFailover, "a/m1"))
		})
	}()
	<-inSync
	upserted := make(chan error, 1)
	go func() { upserted <- f.r.UpsertVirtualModel(chainVM("local", StrategyFailover, "b/m1"), nil) }()
	select {
	case err := <-upserted:
		t.Fatalf("an admin change went through during a reconcile (err %v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	require.NoError(t, <-reconciled)
	require.Empty(t, seen, "no change made in between")
	require.NoError(t, <-upserted)
	_, err := f.r.VirtualModel("shared-made")
	require.NoError(t, err)
	_, err = f.r.VirtualModel("local")
	require.NoError(t, err)
	require.NoError(t, f.r.Reconcile(func(c VirtualModelChanges) error { return c.Delete("shared-made") }))
	_, err = f.r.VirtualModel("shared-made")
	require.ErrorIs(t, err, ErrVirtualModelNotFound)
}
