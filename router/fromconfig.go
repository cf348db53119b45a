package router

import (
	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/resilience"
)

// FromConfig converts a virtual model as written in the config file (or sent to the
// admin API, which uses the same shape). Its failover block overrides the global
// block field by field, which overrides the built-in defaults.
func FromConfig(global config.Failover, vm config.VirtualModel, configManaged bool) VirtualModel {
	rv := VirtualModel{Source: vm.Source, Strategy: Strategy(vm.Strategy), ConfigManaged: configManaged,
		Failover: failoverPolicy(global, vm.Failover), MaxResumes: vm.StreamResume.Max(), Spec: vm}
	if vm.HedgeAfter != nil {
		rv.HedgeAfter = *vm.HedgeAfter
	}
	for _, t := range vm.Targets {
		w := 1
		if t.Weight != nil {
			w = *t.Weight
		}
		rv.Targets = append(rv.Targets, VirtualTarget{Model: t.Model, Weight: w})
	}
	return rv
}

func failoverPolicy(global config.Failover, own *config.Failover) Failover {
	f := DefaultFailover()
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
				f.Errors = append(f.Errors, ParsePhrase(p))
			}
		}
		if b.MaxAttempts != nil {
			f.MaxAttempts = *b.MaxAttempts
		}
	}
	return f
}
