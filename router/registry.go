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

// String is "provider/model".
func (r Route) String() string { return r.Provider + "/" + r.Model }

// Target is a provider with its configured models and its resilience guard.
type Target struct {
	// Provider calls the upstream.
	Provider providers.Provider
	// Configured models are served even when discovery fails.
	Configured []string
	// Guard runs every upstream call through retries and circuit breakers.
	Guard *resilience.Guard
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

// registry holds every provider's model list.
type registry struct {
	mu        sync.RWMutex
	order     []string // provider names, sorted: "first provider that lists it"
	providers map[string]*providerModels
}

func newRegistry(targets []Target) *registry {
	r := &registry{providers: map[string]*providerModels{}}
	for _, t := range targets {
		name := t.Provider.Name()
		r.order = append(r.order, name)
		r.providers[name] = &providerModels{target: t}
	}
	slices.Sort(r.order)
	return r
}

// discover asks every provider for its models, concurrently. A failed provider
// keeps its previous list.
func (r *registry) discover(ctx context.Context, log *slog.Logger, timeout time.Duration) {
	var wg sync.WaitGroup
	for _, name := range r.order {
		wg.Add(1)
		go func(pm *providerModels) {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			models, err := pm.target.Provider.Models(cctx)
			r.mu.Lock()
			defer r.mu.Unlock()
			pm.lastCheck = time.Now()
			pm.lastErr = err
			if err != nil {
				log.Warn("model discovery failed; using the last good list and configured models",
					"provider", name, "error", err.Error(), "configured", len(pm.target.Configured))
				return
			}
			pm.discovered = models
			log.Info("models discovered", "provider", name, "count", len(models))
		}(r.providers[name])
	}
	wg.Wait()
}

// resolve maps a requested model name to a route.
func (r *registry) resolve(model string) (Route, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if prov, local, ok := strings.Cut(model, "/"); ok {
		if _, known := r.providers[prov]; known && local != "" {
			return Route{Provider: prov, Model: local}, nil
		}
	}
	for _, name := range r.order {
		if slices.Contains(r.providers[name].models(), model) {
			return Route{Provider: name, Model: model}, nil
		}
	}
	if r.empty() {
		return Route{}, ErrNoModels
	}
	return Route{}, &NotFoundError{Model: model}
}

func (r *registry) empty() bool {
	for _, pm := range r.providers {
		if len(pm.discovered) > 0 || len(pm.target.Configured) > 0 {
			return false
		}
	}
	return true
}

// Model is one listed model.
type Model struct {
	// ID is "provider/model".
	ID string
	// OwnedBy is the provider name.
	OwnedBy string
}

func (r *registry) list() []Model {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []Model
	for _, name := range r.order {
		for _, m := range r.providers[name].models() {
			out = append(out, Model{ID: name + "/" + m, OwnedBy: name})
		}
	}
	return out
}
