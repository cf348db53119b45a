// Package router resolves the model a client names to the provider and
// provider-local model that serve it, and runs the call through that target's
// resilience guard.
package router

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/resilience"
)

// ErrModelNotFound is returned for a model no provider serves.
var ErrModelNotFound = errors.New("model not found")

// ErrNoModels is returned when no provider has any model (discovery failed everywhere
// and nothing is configured).
var ErrNoModels = errors.New("no models available")

// NotFoundError names the model that was not found; it matches ErrModelNotFound.
type NotFoundError struct{ Model string }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("The model '%s' does not exist or you do not have access to it.", e.Model)
}

// Is matches ErrModelNotFound.
func (e *NotFoundError) Is(target error) bool { return target == ErrModelNotFound }

// Route is one resolved target.
type Route struct {
	// Provider is the configured provider name.
	Provider string
	// Model is the provider-local model name.
	Model string
}

// String is "provider/model", or "provider" for a call to no model.
func (r Route) String() string {
	if r.Model == "" {
		return r.Provider // a call to the provider, not to one of its models (passthrough)
	}
	return r.Provider + "/" + r.Model
}

// Target is a provider with its configured models and its resilience guard.
type Target struct {
	// Provider calls the upstream.
	Provider providers.Provider
	// Configured models are served even when discovery fails.
	Configured []string
	// Guard runs every upstream call through retries and circuit breakers.
	Guard *resilience.Guard
	// Limiter, when set, holds the provider account's own limits: a target at
	// them is skipped like an open breaker.
	Limiter TargetLimiter
}

// providerModels is one provider's known models.
type providerModels struct {
	target     Target
	discovered []string
	lastErr    error
	lastCheck  time.Time
}

func (p *providerModels) models() []string {
	out := slices.Clone(p.discovered)
	for _, m := range p.target.Configured {
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// registry holds every provider's model list. Writers (discovery) hold mu and
// publish an immutable snapshot; requests read the snapshot without locking.
type registry struct {
	mu        sync.Mutex
	order     []string // provider names, sorted: "first provider that lists it"
	providers map[string]*providerModels
	snap      atomic.Pointer[snapshot]
}

// snapshot is what requests read.
type snapshot struct {
	bare  map[string]string // model → first provider listing it
	known map[string]bool   // provider names
	list  []Model
}

func newRegistry(targets []Target) *registry {
	r := &registry{providers: map[string]*providerModels{}}
	for _, t := range targets {
		name := t.Provider.Name()
		r.order = append(r.order, name)
		r.providers[name] = &providerModels{target: t}
	}
	slices.Sort(r.order)
	r.publish()
	return r
}

// publish rebuilds the snapshot; callers hold mu (or are the constructor).
func (r *registry) publish() {
	s := &snapshot{bare: map[string]string{}, known: map[string]bool{}}
	for _, name := range r.order {
		s.known[name] = true
		for _, m := range r.providers[name].models() {
			if _, taken := s.bare[m]; !taken {
				s.bare[m] = name
			}
			s.list = append(s.list, Model{ID: name + "/" + m, OwnedBy: name})
		}
	}
	r.snap.Store(s)
}

// discover asks every provider (or, with onlyFailed, those whose last discovery
// failed) for its models, concurrently. A failed provider keeps its previous list.
func (r *registry) discover(ctx context.Context, log *slog.Logger, timeout time.Duration, onlyFailed bool) {
	var wg sync.WaitGroup
	for _, name := range r.order {
		if onlyFailed {
			r.mu.Lock()
			failed := r.providers[name].lastErr != nil
			r.mu.Unlock()
			if !failed {
				continue
			}
		}
		wg.Add(1)
		go func(pm *providerModels) {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			models, err := modelsOf(cctx, pm.target.Provider)
			r.mu.Lock()
			defer r.mu.Unlock()
			pm.lastCheck = time.Now()
			if err != nil {
				pm.lastErr = err
				log.Warn("model discovery failed; using the last good list and configured models",
					"provider", name, "error", err.Error(), "configured", len(pm.target.Configured))
				return
			}
			pm.lastErr = nil
			if onlyFailed {
				log.Info("model discovery recovered", "provider", name, "count", len(models))
			} else {
				log.Info("models discovered", "provider", name, "count", len(models))
			}
			pm.discovered = models
		}(r.providers[name])
	}
	wg.Wait()
	r.mu.Lock()
	r.publish()
	r.mu.Unlock()
}

// resolve maps a requested model name to a route.
func (r *registry) resolve(model string) (Route, error) {
	s := r.snap.Load()
	if prov, local, ok := strings.Cut(model, "/"); ok && local != "" && s.known[prov] {
		return Route{Provider: prov, Model: local}, nil
	}
	if prov, ok := s.bare[model]; ok {
		return Route{Provider: prov, Model: model}, nil
	}
	if len(s.list) == 0 {
		return Route{}, ErrNoModels
	}
	return Route{}, &NotFoundError{Model: model}
}

// Model is one listed model.
type Model struct {
	// ID is "provider/model".
	ID string
	// OwnedBy is the provider name.
	OwnedBy string
}

func (r *registry) list() []Model { return slices.Clone(r.snap.Load().list) }

// ProviderStatus is a provider's discovery state.
type ProviderStatus struct {
	// Name is the configured provider name.
	Name string
	// Discovered and Configured count its models.
	Discovered, Configured int
	// LastCheck is the last discovery attempt; LastError its error, if it failed.
	LastCheck time.Time
	LastError string
}

func (r *registry) status() []ProviderStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]ProviderStatus, 0, len(r.order))
	for _, name := range r.order {
		pm := r.providers[name]
		st := ProviderStatus{Name: name, Discovered: len(pm.discovered), Configured: len(pm.target.Configured), LastCheck: pm.lastCheck}
		if pm.lastErr != nil {
			st.LastError = pm.lastErr.Error()
		}
		out = append(out, st)
	}
	return out
}

// modelsOf asks p for its models. Discovery runs in goroutines of its own, where
// a panic (a provider's bug, say on an upstream's odd list) would end the
// process: it is a failed discovery instead, the last good list kept.
func modelsOf(ctx context.Context, p providers.Provider) (models []string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("model discovery panicked: %v", r)
		}
	}()
	return p.Models(ctx)
}
