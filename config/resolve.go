package config

import (
	"time"

	"github.com/switchyard/switchyard/resilience"
)

// ResolveResilience returns a provider's effective settings: each field from the
// provider's block if set, else the global block (environment included), else the
// built-in default. cfg must have passed Validate.
func ResolveResilience(global, provider Resilience) (resilience.RetrySettings, resilience.BreakerSettings) {
	r := resilience.DefaultRetry()
	gr, pr := global.Retry, provider.Retry
	r.MaxRetries = pick(r.MaxRetries, gr.MaxRetries, pr.MaxRetries)
	r.InitialBackoff = pick(r.InitialBackoff, gr.InitialBackoff, pr.InitialBackoff)
	r.MaxBackoff = pick(r.MaxBackoff, gr.MaxBackoff, pr.MaxBackoff)
	r.BackoffFactor = pick(r.BackoffFactor, gr.BackoffFactor, pr.BackoffFactor)
	r.JitterFactor = pick(r.JitterFactor, gr.JitterFactor, pr.JitterFactor)
	if l := pickPtr(gr.RetryOnStatuses, pr.RetryOnStatuses); l != nil {
		r.RetryOnStatuses, _ = resilience.ParseStatusSet(*l)
	}

	b := resilience.DefaultBreaker()
	gb, pb := global.CircuitBreaker, provider.CircuitBreaker
	b.Enabled = pick(b.Enabled, gb.Enabled, pb.Enabled)
	if s := pickPtr(gb.Scope, pb.Scope); s != nil {
		b.Scope = resilience.Scope(*s)
	}
	b.FailureThreshold = pick(b.FailureThreshold, gb.FailureThreshold, pb.FailureThreshold)
	b.SuccessThreshold = pick(b.SuccessThreshold, gb.SuccessThreshold, pb.SuccessThreshold)
	b.Timeout = pick(b.Timeout, gb.Timeout, pb.Timeout)
	b.SlowCallThreshold = pick(b.SlowCallThreshold, gb.SlowCallThreshold, pb.SlowCallThreshold)
	if l := pickPtr(gb.FailureOnStatuses, pb.FailureOnStatuses); l != nil {
		b.FailureOnStatuses, _ = resilience.ParseStatusSet(*l)
	}
	return r, b
}

func pick[T any](def T, global, provider *T) T {
	if provider != nil {
		return *provider
	}
	if global != nil {
		return *global
	}
	return def
}

func pickPtr[T any](global, provider *T) *T {
	if provider != nil {
		return provider
	}
	return global
}

// ResolveBudget returns a provider's effective retry budget (percent of in-flight
// requests, minimum concurrent retries).
func ResolveBudget(global, provider Resilience) (float64, int) {
	return pick(resilience.DefaultBudgetPercent, global.Retry.BudgetPercent, provider.Retry.BudgetPercent),
		pick(resilience.DefaultBudgetMinConcurrency, global.Retry.BudgetMinConcurrency, provider.Retry.BudgetMinConcurrency)
}

// ResolveFirstTokenTimeout returns a provider's effective first_token_timeout
// (0 = no limit).
func ResolveFirstTokenTimeout(global, provider Resilience) time.Duration {
	return pick(resilience.DefaultFirstTokenTimeout, global.FirstTokenTimeout, provider.FirstTokenTimeout)
}
