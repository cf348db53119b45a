package router

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/switchyard/switchyard/resilience"
)

// Errors of the admin operations.
var (
	// ErrConfigManaged refuses changes to virtual models defined in the config file.
	ErrConfigManaged = errors.New("virtual model is managed by the config file")
	// ErrVirtualModelNotFound is returned for an unknown virtual model.
	ErrVirtualModelNotFound = errors.New("virtual model not found")
	// ErrUnknownProvider is returned for a provider that is not configured.
	ErrUnknownProvider = errors.New("unknown provider")
	// ErrBreakerNotFound is returned for a model breaker that does not exist.
	ErrBreakerNotFound = errors.New("circuit breaker not found")
)

// VirtualModel returns one virtual model by source.
func (r *Router) VirtualModel(source string) (VirtualModel, error) {
	for _, vm := range r.virtual.Load().list {
		if vm.Source == source {
			return vm, nil
		}
	}
	return VirtualModel{}, fmt.Errorf("%w: %q", ErrVirtualModelNotFound, source)
}

// apiManaged returns the virtual models created through the API.
func apiManaged(list []VirtualModel) []VirtualModel {
	var out []VirtualModel
	for _, vm := range list {
		if !vm.ConfigManaged {
			out = append(out, vm)
		}
	}
	return out
}

// change validates next, lets persist store the API-managed part, then makes it
// live for the next request. Admin changes are serialised.
func (r *Router) change(next []VirtualModel, persist func([]VirtualModel) error) error {
	table, err := buildTable(next, r.targets)
	if err != nil {
		return err
	}
	if persist != nil {
		if err := persist(apiManaged(next)); err != nil {
			return fmt.Errorf("storing virtual models: %w", err)
		}
	}
	r.virtual.Store(&virtualState{table: table, list: next})
	return nil
}

// UpsertVirtualModel creates or replaces an API-managed virtual model.
func (r *Router) UpsertVirtualModel(vm VirtualModel, persist func([]VirtualModel) error) error {
	r.adminMu.Lock()
	defer r.adminMu.Unlock()
	return r.upsert(vm, persist)
}

func (r *Router) upsert(vm VirtualModel, persist func([]VirtualModel) error) error {
	vm.ConfigManaged = false
	next := slices.Clone(r.virtual.Load().list)
	i := slices.IndexFunc(next, func(v VirtualModel) bool { return v.Source == vm.Source })
	switch {
	case i < 0:
		next = append(next, vm)
	case next[i].ConfigManaged:
		return fmt.Errorf("%w: %q is defined in the config file; change it there", ErrConfigManaged, vm.Source)
	default:
		next[i] = vm
	}
	return r.change(next, persist)
}

// DeleteVirtualModel removes an API-managed virtual model.
func (r *Router) DeleteVirtualModel(source string, persist func([]VirtualModel) error) error {
	r.adminMu.Lock()
	defer r.adminMu.Unlock()
	return r.delete(source, persist)
}

func (r *Router) delete(source string, persist func([]VirtualModel) error) error {
	next := slices.Clone(r.virtual.Load().list)
	i := slices.IndexFunc(next, func(v VirtualModel) bool { return v.Source == source })
	if i < 0 {
		return fmt.Errorf("%w: %q", ErrVirtualModelNotFound, source)
	}
	if next[i].ConfigManaged {
		return fmt.Errorf("%w: %q is defined in the config file; remove it there", ErrConfigManaged, source)
	}
	return r.change(slices.Delete(next, i, i+1), persist)
}

// Reconcile runs sync with no other virtual-model change in between: what sync
// reads (the current set, and a shared store's) and the changes it makes are one
// step, so applying another replica's state cannot undo a change made here
// meanwhile. sync's changes are not persisted (they come from the store).
func (r *Router) Reconcile(sync func(VirtualModelChanges) error) error {
	r.adminMu.Lock()
	defer r.adminMu.Unlock()
	return sync(VirtualModelChanges{r: r})
}

// VirtualModelChanges are the changes Reconcile's sync may make, while it runs
// only: kept past it, they would be made without the lock. (The store's read
// inside sync is bounded by its own timeout: an outage holds admin changes back
// by that long at most.)
type VirtualModelChanges struct{ r *Router }

// List is the current set.
func (c VirtualModelChanges) List() []VirtualModel { return c.r.VirtualModels() }

// Upsert creates or replaces an API-managed virtual model.
func (c VirtualModelChanges) Upsert(vm VirtualModel) error { return c.r.upsert(vm, nil) }

// Delete removes an API-managed virtual model.
func (c VirtualModelChanges) Delete(source string) error { return c.r.delete(source, nil) }

// Breaker returns the breaker of provider (and model, for model scope). With create,
// a model breaker that does not exist yet is made (to trip it ahead of traffic).
func (r *Router) Breaker(provider, model string, create bool) (*resilience.Breaker, error) {
	t, ok := r.targets[provider]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownProvider, provider)
	}
	bs := t.Guard.Breakers()
	if !create && !bs.Has(model) {
		return nil, fmt.Errorf("%w: provider %q model %q", ErrBreakerNotFound, provider, model)
	}
	return bs.Own(model) // the model's own, during a trip of the whole provider too
}

// CheckTrip says whether TripBreaker(provider, model) can be made: the
// provider is known.
func (r *Router) CheckTrip(provider, model string) error {
	if _, ok := r.targets[provider]; !ok {
		return fmt.Errorf("%w: %q", ErrUnknownProvider, provider)
	}
	return nil
}

// TripBreaker forces a breaker open for d (0: its configured timeout). Without
// a model it is the whole provider's: with breakers per model, every model's
// calls are refused until d has passed (resilience.Breakers.TripAll).
func (r *Router) TripBreaker(provider, model string, d time.Duration) (resilience.Entry, error) {
	if err := r.CheckTrip(provider, model); err != nil {
		return resilience.Entry{}, err
	}
	if model == "" {
		bs := r.targets[provider].Guard.Breakers()
		bs.TripAll(d)
		b, _ := bs.Own("") // the provider's
		return r.entry(provider, "", b), nil
	}
	b, err := r.Breaker(provider, model, true)
	if err != nil {
		return resilience.Entry{}, err
	}
	b.Trip(d)
	return r.entry(provider, model, b), nil
}

// ResetBreaker forces a breaker closed with cleared counters.
func (r *Router) ResetBreaker(provider, model string) (resilience.Entry, error) {
	b, err := r.Breaker(provider, model, false)
	if err != nil {
		return resilience.Entry{}, err
	}
	if model == "" {
		r.targets[provider].Guard.Breakers().ResetAll()
		return r.entry(provider, model, b), nil
	}
	b.Reset()
	return r.entry(provider, model, b), nil
}

func (r *Router) entry(provider, model string, b *resilience.Breaker) resilience.Entry {
	if r.targets[provider].Guard.Breakers().Scope() != resilience.ScopeModel {
		model = ""
	}
	return resilience.Entry{Provider: provider, Model: model, Snapshot: b.Snapshot()}
}
