package keys

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Clock tells the time (resilience.SystemClock is the real one).
type Clock interface{ Now() time.Time }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// Registry is the keys in force: an index by hash that the request path reads
// without locks, kept in step with a Store. Changes made through it are written
// to the store first; changes the store reports (another replica's) are read
// back in.
type Registry struct {
	store Store
	clock Clock
	mu    sync.Mutex // serialises changes
	index atomic.Pointer[index]
	stop  func()
	onErr func(error) // hears failed reloads after a change notice
	// reloadMu makes a reload's read and its store one step: two reloads at
	// once (a change notice and a change's own) must not store the older read last.
	reloadMu sync.Mutex
}

type index struct {
	byHash map[string]*Key
	byID   map[string]*Key
}

// NewRegistry loads the keys from st and follows its changes; onReloadError
// (optional) hears failed reloads, after which the last known keys stay in force.
func NewRegistry(ctx context.Context, st Store, clock Clock, onReloadError func(error)) (*Registry, error) {
	if clock == nil {
		clock = systemClock{}
	}
	r := &Registry{store: st, clock: clock, onErr: onReloadError}
	if err := r.Reload(ctx); err != nil {
		return nil, err
	}
	r.stop = st.Subscribe(func() {
		if err := r.Reload(context.Background()); err != nil && r.onErr != nil {
			r.onErr(err)
		}
	})
	return r, nil
}

// Close stops following the store.
func (r *Registry) Close() {
	if r.stop != nil {
		r.stop()
	}
}

// Reload re-reads every key from the store.
func (r *Registry) Reload(ctx context.Context) error {
	r.reloadMu.Lock()
	defer r.reloadMu.Unlock()
	ks, err := r.store.List(ctx)
	if err != nil {
		return err
	}
	ix := &index{byHash: make(map[string]*Key, len(ks)), byID: make(map[string]*Key, len(ks))}
	for i := range ks {
		k := &ks[i]
		ix.byHash[k.Hash], ix.byID[k.ID] = k, k
	}
	r.index.Store(ix)
	return nil
}

// Authenticate returns the key whose secret this is: ErrUnknown if none (a
// string that is not a virtual key's included), ErrRevoked or ErrExpired if it
// may no longer be used.
func (r *Registry) Authenticate(secret string) (*Key, error) {
	if !strings.HasPrefix(secret, SecretPrefix) {
		return nil, ErrUnknown
	}
	h := HashOf(secret)
	k := r.index.Load().byHash[h]
	if k == nil || !sameHash(k.Hash, h) {
		return nil, ErrUnknown
	}
	if err := k.Active(r.clock.Now()); err != nil {
		return k, err
	}
	return k, nil
}

// Get returns the key with id.
func (r *Registry) Get(id string) (Key, error) {
	if k := r.index.Load().byID[id]; k != nil {
		return *k, nil
	}
	return Key{}, ErrNotFound
}

// List returns every key, by creation time.
func (r *Registry) List() []Key {
	ix := r.index.Load()
	out := make([]Key, 0, len(ix.byID))
	for _, k := range ix.byID {
		out = append(out, *k)
	}
	slices.SortFunc(out, func(a, b Key) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// Create makes a key from spec and returns it with its secret, which is not kept
// anywhere: it cannot be shown again. Once the key is stored it is created,
// whatever follows: a failed reload of this replica's index is reported
// (onReloadError) and caught up by the store's next notice, never a reason to
// lose the secret.
func (r *Registry) Create(ctx context.Context, spec Spec) (Key, string, error) {
	now := r.clock.Now().UTC()
	if err := spec.Validate(now); err != nil {
		return Key{}, "", err
	}
	secret, hash, prefix := newSecret()
	k := Key{ID: newID(), Prefix: prefix, Hash: hash, CreatedAt: now, UpdatedAt: now}
	k.apply(spec)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.store.Put(ctx, k); err != nil {
		return Key{}, "", err
	}
	r.reloadAfterChange(ctx)
	return k, secret, nil
}

// reloadAfterChange reads a change just stored into the index; a failure is the
// reload's, not the change's (the change stands, and the store's next notice or
// resync reloads).
func (r *Registry) reloadAfterChange(ctx context.Context) {
	if err := r.Reload(ctx); err != nil && r.onErr != nil {
		r.onErr(err)
	}
}

func (k *Key) apply(s Spec) {
	k.Name, k.Models, k.Limits, k.ExpiresAt = s.Name, slices.Clone(s.Models), s.Limits, s.ExpiresAt
	k.BudgetUSD, k.BudgetPeriod = s.BudgetUSD, s.BudgetPeriod
}

// SpecOf is k's settable part.
func SpecOf(k Key) Spec {
	return Spec{Name: k.Name, Models: slices.Clone(k.Models), Limits: k.Limits, ExpiresAt: k.ExpiresAt,
		BudgetUSD: k.BudgetUSD, BudgetPeriod: k.BudgetPeriod}
}

// Update changes key id: edit receives its current spec, as stored, and changes
// it (it may run more than once: see Store.Change). A revoked key cannot be
// changed, whichever replica revoked it.
func (r *Registry) Update(ctx context.Context, id string, edit func(*Spec) error) (Key, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Now().UTC()
	k, err := r.store.Change(ctx, id, func(k *Key) error {
		if !k.RevokedAt.IsZero() {
			return ErrRevoked
		}
		spec := SpecOf(*k)
		if err := edit(&spec); err != nil {
			return err
		}
		check := spec
		if spec.ExpiresAt.Equal(k.ExpiresAt) {
			check.ExpiresAt = time.Time{} // an unchanged expiry that has passed is no reason to refuse other changes
		}
		if err := check.Validate(now); err != nil {
			return err
		}
		spec.Name = check.Name
		k.apply(spec)
		k.UpdatedAt = now
		return nil
	})
	if err != nil {
		return Key{}, err
	}
	r.reloadAfterChange(ctx)
	return k, nil
}

// Revoke revokes key id at once; the key stays listed, marked revoked. Revoking
// a revoked key changes nothing.
func (r *Registry) Revoke(ctx context.Context, id string) (Key, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Now().UTC()
	k, err := r.store.Change(ctx, id, func(k *Key) error {
		if k.RevokedAt.IsZero() {
			k.RevokedAt, k.UpdatedAt = now, now
		}
		return nil
	})
	if err != nil {
		return Key{}, err
	}
	r.reloadAfterChange(ctx)
	return k, nil
}
