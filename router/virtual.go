package router

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/switchyard/switchyard/config"
)

// Strategy picks a virtual model's first target.
type Strategy string

// Strategies.
const (
	StrategyFailover   Strategy = "failover"
	StrategyRoundRobin Strategy = "round_robin"
	StrategyWeighted   Strategy = "weighted"
)

// VirtualModel routes one model name across several provider models.
type VirtualModel struct {
	// Source is the name clients send; it shadows a real model of the same name.
	Source string
	// Strategy picks the first target.
	Strategy Strategy
	// Targets are provider models ("provider/model"), in failover order.
	Targets []VirtualTarget
	// Failover is the policy for moving on to the next target.
	Failover Failover
	// MaxResumes is how many times a text stream that breaks after its first byte
	// is continued on the next target (stream_resume); 0 = never.
	MaxResumes int
	// HedgeAfter starts the second target too when the first has produced no
	// content within it (0 = never; see hedge).
	HedgeAfter time.Duration
	// ConfigManaged marks virtual models defined in the config file.
	ConfigManaged bool
	// Spec is the virtual model as written (config file or admin API), kept so that
	// it can be shown and stored in the same shape.
	Spec config.VirtualModel
}

// VirtualTarget is one target and its weight (weighted strategy).
type VirtualTarget struct {
	Model  string
	Weight int
}

// chain is a compiled virtual model; immutable except for its strategy's state
// (a round-robin counter) and its hedge credit.
type chain struct {
	vm       VirtualModel
	routes   []Route
	strategy strategy
	credit   hedgeCredit // caps hedge_after's hedges
}

// ErrInvalidVirtualModel marks a virtual model that cannot be routed.
var ErrInvalidVirtualModel = errors.New("invalid virtual model")

// InvalidError says what is wrong with a virtual model; it matches ErrInvalidVirtualModel.
type InvalidError struct{ Reason string }

func (e *InvalidError) Error() string { return e.Reason }

// Is matches ErrInvalidVirtualModel.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalidVirtualModel }

// Bounds of a virtual model: its name is a model name a caller sends, and its
// chain is walked on every call.
const (
	MaxSourceBytes = 256
	MaxTargets     = 64
)

// compile checks vm against the known providers and builds its chain. Targets
// always name provider models and are resolved directly, never through another
// virtual model (even one that shadows the target's name), so chains cannot loop.
func compile(vm VirtualModel, providers map[string]Target) (*chain, error) {
	name := vm.Source
	if len(name) > MaxSourceBytes {
		name = name[:MaxSourceBytes] + "…"
	}
	bad := func(format string, args ...any) (*chain, error) {
		return nil, &InvalidError{Reason: fmt.Sprintf("virtual model %q: ", name) + fmt.Sprintf(format, args...)}
	}
	if vm.Source == "" {
		return bad("source is required")
	}
	if len(vm.Source) > MaxSourceBytes {
		return bad("source is longer than %d bytes", MaxSourceBytes)
	}
	if len(vm.Targets) > MaxTargets {
		return bad("has %d targets, more than %d", len(vm.Targets), MaxTargets)
	}
	if vm.Strategy == "" {
		vm.Strategy = StrategyFailover
	}
	newStrategy, ok := strategies[vm.Strategy]
	if !ok {
		return bad("unknown strategy %q (want failover, round_robin or weighted)", vm.Strategy)
	}
	if len(vm.Targets) == 0 {
		return bad("needs at least one target")
	}
	c := &chain{vm: vm}
	weights := make([]int, 0, len(vm.Targets))
	for i, t := range vm.Targets {
		prov, local, ok := strings.Cut(t.Model, "/")
		if !ok || local == "" {
			return bad("target %d (%s) must be provider/model", i, t.Model)
		}
		if _, known := providers[prov]; !known {
			return bad("target %d (%s) names unknown provider %q", i, t.Model, prov)
		}
		if t.Weight < 0 {
			return bad("target %d (%s) has a negative weight", i, t.Model)
		}
		weights = append(weights, t.Weight)
		c.routes = append(c.routes, Route{Provider: prov, Model: local})
	}
	st, err := newStrategy(weights)
	if err != nil {
		return bad("%s", err.Error())
	}
	c.strategy = st
	return c, nil
}

// first picks the index of the first target by strategy.
func (c *chain) first() int { return c.strategy.first() }

// failsOver reports whether the chain moves past a failed target: its strategy
// does, or its failover policy is enabled.
func (c *chain) failsOver() bool {
	return c.strategy.failsOver() || c.vm.Failover.Enabled
}

// at returns the i-th target to try: the first pick, then the others in declared order.
func (c *chain) at(first, i int) Route {
	if i == 0 {
		return c.routes[first]
	}
	if i <= first {
		return c.routes[i-1]
	}
	return c.routes[i]
}

// virtualTable is an immutable set of chains, swapped whole on change.
type virtualTable map[string]*chain

// buildTable compiles vms; it reports every problem at once.
func buildTable(vms []VirtualModel, providers map[string]Target) (virtualTable, error) {
	sources := map[string]bool{}
	var errs []error
	for _, vm := range vms {
		if sources[vm.Source] {
			errs = append(errs, &InvalidError{Reason: fmt.Sprintf("virtual model %q is defined twice", vm.Source)})
		}
		sources[vm.Source] = true
	}
	t := virtualTable{}
	for _, vm := range vms {
		c, err := compile(vm, providers)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		t[vm.Source] = c
	}
	return t, errors.Join(errs...)
}
