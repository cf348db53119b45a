package resilience

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Model-scope limits (SPEC §4).
const (
	// MaxModelBreakers is the most model breakers one provider keeps.
	MaxModelBreakers = 1024
	// ModelBreakerIdle is how long an idle closed model breaker is kept.
	ModelBreakerIdle = 10 * time.Minute
)

// ErrNoBreakerSlot is returned when every model-breaker slot of a provider is held by
// an open or busy breaker; it is failover-eligible like an open breaker.
var ErrNoBreakerSlot = errors.New("no circuit breaker slot available")

// SlotError says which provider had no slot; it matches ErrNoBreakerSlot.
type SlotError struct{ Provider, Model string }

func (e *SlotError) Error() string {
	return fmt.Sprintf("provider %s is tracking too many failing models; %s is temporarily unavailable", e.Provider, e.Model)
}

// Is matches ErrNoBreakerSlot.
func (e *SlotError) Is(target error) bool { return target == ErrNoBreakerSlot }

// Breakers holds a provider's breakers: one for the provider, or one per model.
type Breakers struct {
	provider string
	settings BreakerSettings
	clock    Clock
	limit    int
	obs      Observer

	shared *Breaker // provider scope, and calls without a model
	// drained is when an admin trip of the whole provider ends, with breakers
	// per model (unix ns; 0: none): until then every call gets the provider's
	// breaker, open (TripAll).
	drained atomic.Int64

	mu     sync.Mutex
	models map[string]*Breaker
}

// NewBreakers returns the breakers of one provider.
func NewBreakers(provider string, s BreakerSettings, clock Clock, obs Observer) *Breakers {
	if obs == nil {
		obs = NopObserver{}
	}
	bs := &Breakers{provider: provider, settings: s, clock: clock, limit: MaxModelBreakers, obs: obs,
		models: map[string]*Breaker{}}
	bs.shared = bs.newBreaker("")
	return bs
}

func (bs *Breakers) newBreaker(model string) *Breaker {
	b := NewBreaker(bs.settings, bs.clock)
	b.provider, b.model, b.obs = bs.provider, model, bs.obs
	return b
}

// For returns the breaker guarding model (the provider's own with provider scope).
func (bs *Breakers) For(model string) (*Breaker, error) {
	if bs.settings.Scope == ScopeModel && model != "" && bs.draining() {
		return bs.shared, nil // the whole provider is tripped
	}
	return bs.Own(model)
}

// draining reports whether a trip of the whole provider (TripAll) is in force;
// once it has run out, the provider's breaker is closed again: with breakers
// per model no call consults it to move it on.
func (bs *Breakers) draining() bool {
	u := bs.drained.Load()
	if u == 0 {
		return false
	}
	if bs.clock.Now().UnixNano() < u {
		return true
	}
	if bs.drained.CompareAndSwap(u, 0) {
		bs.shared.Reset()
	}
	return false
}

// Own returns model's own breaker (the provider's with provider scope),
// whatever trip of the whole provider is in force: the one an admin trip or
// reset naming the model acts on.
func (bs *Breakers) Own(model string) (*Breaker, error) {
	if bs.settings.Scope != ScopeModel || model == "" {
		return bs.shared, nil
	}
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if b, ok := bs.models[model]; ok {
		return b, nil
	}
	now := bs.clock.Now()
	for name, b := range bs.models {
		if b.evictable(now, ModelBreakerIdle) {
			delete(bs.models, name)
		}
	}
	if len(bs.models) >= bs.limit {
		oldest, at := "", time.Time{}
		for name, b := range bs.models {
			if idle, used := b.idleClosed(); idle && (oldest == "" || used.Before(at)) {
				oldest, at = name, used
			}
		}
		if oldest == "" {
			return nil, &SlotError{Provider: bs.provider, Model: model}
		}
		delete(bs.models, oldest)
	}
	b := bs.newBreaker(model)
	bs.models[model] = b
	return b, nil
}

// TripAll forces the whole provider open for d (0: the configured timeout):
// the provider's breaker, and with breakers per model every model's calls too,
// which get the provider's breaker until d has passed (then each model's own
// again; the provider's goes half-open, as any tripped breaker does).
func (bs *Breakers) TripAll(d time.Duration) {
	if d <= 0 {
		d = bs.settings.Timeout
	}
	bs.shared.Trip(d)
	if bs.settings.Scope == ScopeModel {
		bs.drained.Store(bs.clock.Now().Add(d).UnixNano())
	}
}

// ResetAll ends TripAll: the provider's breaker is closed, and every model's
// calls get their own breaker again.
func (bs *Breakers) ResetAll() {
	bs.drained.Store(0)
	bs.shared.Reset()
}

// Scope is the scope the breakers were built with.
func (bs *Breakers) Scope() Scope { return bs.settings.Scope }

// Has reports whether the breaker for model exists (always, for provider scope).
func (bs *Breakers) Has(model string) bool {
	if bs.settings.Scope != ScopeModel || model == "" {
		return true
	}
	bs.mu.Lock()
	defer bs.mu.Unlock()
	_, ok := bs.models[model]
	return ok
}

// Entry is one breaker in a listing.
type Entry struct {
	// Provider is the configured provider name; Model is empty for provider scope.
	Provider, Model string
	Snapshot
}

// List returns every breaker, sorted by model.
func (bs *Breakers) List() []Entry {
	if bs.settings.Scope != ScopeModel {
		return []Entry{{Provider: bs.provider, Snapshot: bs.shared.Snapshot()}}
	}
	draining := bs.draining()
	bs.mu.Lock()
	defer bs.mu.Unlock()
	out := make([]Entry, 0, len(bs.models)+1)
	if s := bs.shared.Snapshot(); draining || s.State != Closed { // a trip of the whole provider (TripAll), or calls without a model
		out = append(out, Entry{Provider: bs.provider, Snapshot: s})
	}
	for name, b := range bs.models {
		out = append(out, Entry{Provider: bs.provider, Model: name, Snapshot: b.Snapshot()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Model < out[j].Model })
	return out
}
