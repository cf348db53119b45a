package app

import (
	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/resilience"
	"github.com/switchyard/switchyard/router"
)

// virtualModels converts the config's virtual models for the router; each one's
// failover block overrides the global block field by field, which overrides the
// built-in defaults.
func virtualModels(cfg *config.Config) []router.VirtualModel {
	out := make([]router.VirtualModel, 0, len(cfg.VirtualModels))
	for _, vm := range cfg.VirtualModels {
		rv := router.VirtualModel{Source: vm.Source, Strategy: router.Strategy(vm.Strategy), ConfigManaged: true,
			Failover: failoverPolicy(cfg.Failover, vm.Failover)}
		for _, t := range vm.Targets {
			w := 1
			if t.Weight != nil {
				w = *t.Weight
			}
			rv.Targets = append(rv.Targets, router.VirtualTarget{Model: t.Model, Weight: w})
		}
		out = append(out, rv)
	}
	return out
}

func failoverPolicy(global config.Failover, own *config.Failover) router.Failover {
	f := router.DefaultFailover()
	for _, b := range []*config.Failover{&global, own} {
		if b == nil {
			continue
		}
		if b.Enabled != nil {
			f.Enabled = *b.Enabled
		}
		if b.RetryOnStatuses != nil && len(*b.RetryOnStatuses) > 0 {
			f.Statuses, _ = resilience.ParseStatusSet(*b.RetryOnStatuses)
		}
		if len(b.RetryOnErrors) > 0 {
			f.Errors = f.Errors[:0:0]
			for _, p := range b.RetryOnErrors {
				f.Errors = append(f.Errors, router.ParsePhrase(p))
			}
		}
		if b.MaxAttempts != nil {
			f.MaxAttempts = *b.MaxAttempts
		}
	}
	return f
}
