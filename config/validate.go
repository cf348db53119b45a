package config

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/switchyard/switchyard/resilience"
)

// Validate reports every problem in cfg at once, each with its key path.
func (c *Config) Validate() error {
	var errs []error
	add := func(path, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
	}
	if c.Server.MaxBodyBytes < 0 {
		add("server.max_body_bytes", "must not be negative")
	}
	if c.Server.StreamIdleTimeout < 0 {
		add("server.stream_idle_timeout", "must not be negative")
	}
	validateResilience("resilience", c.Resilience, add)
	names := make([]string, 0, len(c.Providers))
	for name := range c.Providers {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		p := c.Providers[name]
		path := "providers." + name
		if p == nil {
			add(path, "empty provider block")
			continue
		}
		if name == "" || strings.ContainsAny(name, "/ ") {
			add(path, "provider names must be non-empty and contain no '/' or spaces")
		}
		if _, ok := ProviderTypes[p.Type]; !ok {
			add(path+".type", "unknown type %q (want one of %s)", p.Type, typeList())
		}
		if p.BaseURL != "" {
			if u, err := url.Parse(p.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				add(path+".base_url", "%q is not an http(s) URL", p.BaseURL)
			}
		}
		for _, d := range []struct {
			key string
			neg bool
		}{{"connect_timeout", p.ConnectTimeout < 0}, {"timeout", p.Timeout < 0},
			{"response_header_timeout", p.ResponseHeaderTimeout < 0}, {"stream_idle_timeout", p.StreamIdleTimeout < 0}} {
			if d.neg {
				add(path+"."+d.key, "must not be negative")
			}
		}
		validateResilience(path+".resilience", p.Resilience, add)
	}
	validateFailover("failover", &c.Failover, add)
	validateVirtualModels(c, add)
	return errors.Join(errs...)
}

func typeList() string {
	t := make([]string, 0, len(ProviderTypes))
	for k := range ProviderTypes {
		t = append(t, k)
	}
	slices.Sort(t)
	return strings.Join(t, ", ")
}

type addFunc func(path, format string, args ...any)

func validateResilience(path string, r Resilience, add addFunc) {
	rt, cb := r.Retry, r.CircuitBreaker
	nonNeg := func(key string, v *int) {
		if v != nil && *v < 0 {
			add(path+"."+key, "must not be negative")
		}
	}
	nonNeg("retry.max_retries", rt.MaxRetries)
	nonNeg("retry.budget_min_concurrency", rt.BudgetMinConcurrency)
	nonNeg("circuit_breaker.failure_threshold", cb.FailureThreshold)
	if cb.SuccessThreshold != nil && *cb.SuccessThreshold < 1 {
		add(path+".circuit_breaker.success_threshold", "must be at least 1")
	}
	for key, d := range map[string]*float64{"retry.backoff_factor": rt.BackoffFactor} {
		if d != nil && *d < 1 {
			add(path+"."+key, "must be at least 1.0")
		}
	}
	if rt.JitterFactor != nil && (*rt.JitterFactor < 0 || *rt.JitterFactor > 1) {
		add(path+".retry.jitter_factor", "must be between 0 and 1")
	}
	if rt.BudgetPercent != nil && (*rt.BudgetPercent < 0 || *rt.BudgetPercent > 100) {
		add(path+".retry.budget_percent", "must be between 0 and 100")
	}
	for key, d := range map[string]any{
		"retry.initial_backoff": rt.InitialBackoff, "retry.max_backoff": rt.MaxBackoff,
		"circuit_breaker.timeout": cb.Timeout, "circuit_breaker.slow_call_threshold": cb.SlowCallThreshold,
	} {
		if v := durPtr(d); v != nil && *v < 0 {
			add(path+"."+key, "must not be negative")
		}
	}
	if rt.RetryOnStatuses != nil {
		if _, err := resilience.ParseStatusSet(*rt.RetryOnStatuses); err != nil {
			add(path+".retry.retry_on_statuses", "%v", err)
		}
	}
	if cb.FailureOnStatuses != nil {
		if _, err := resilience.ParseStatusSet(*cb.FailureOnStatuses); err != nil {
			add(path+".circuit_breaker.failure_on_statuses", "%v", err)
		}
	}
	if cb.Scope != nil && *cb.Scope != string(resilience.ScopeProvider) && *cb.Scope != string(resilience.ScopeModel) {
		add(path+".circuit_breaker.scope", "unknown scope %q (want provider or model)", *cb.Scope)
	}
}

func validateFailover(path string, f *Failover, add addFunc) {
	if f == nil {
		return
	}
	if f.RetryOnStatuses != nil {
		if _, err := resilience.ParseStatusSet(*f.RetryOnStatuses); err != nil {
			add(path+".retry_on_statuses", "%v", err)
		}
	}
	if f.MaxAttempts != nil && *f.MaxAttempts < 0 {
		add(path+".max_attempts", "must not be negative")
	}
}

func validateVirtualModels(c *Config, add addFunc) {
	sources := map[string]bool{}
	for i, vm := range c.VirtualModels {
		path := fmt.Sprintf("virtual_models[%d]", i)
		if vm.Source == "" {
			add(path+".source", "is required")
		} else if sources[vm.Source] {
			add(path+".source", "duplicate virtual model %q", vm.Source)
		}
		sources[vm.Source] = true
		switch vm.Strategy {
		case "", "failover", "round_robin", "weighted":
		default:
			add(path+".strategy", "unknown strategy %q (want failover, round_robin or weighted)", vm.Strategy)
		}
		if len(vm.Targets) == 0 {
			add(path+".targets", "needs at least one target")
		}
		for j, t := range vm.Targets {
			tp := fmt.Sprintf("%s.targets[%d]", path, j)
			prov, _, ok := strings.Cut(t.Model, "/")
			if !ok {
				add(tp+".model", "%q must be provider/model", t.Model)
			} else if _, known := c.Providers[prov]; !known {
				add(tp+".model", "unknown provider %q", prov)
			}
			if t.Weight != nil && *t.Weight < 0 {
				add(tp+".weight", "must not be negative")
			}
		}
		validateFailover(path+".failover", vm.Failover, add)
	}
}
