// Package resilience holds Switchyard's retry and circuit-breaker policies. It knows
// nothing of HTTP or gRPC: outcomes reach it through the Outcome interface.
package resilience

import "time"

// RetrySettings tune one target's retry sequence. DefaultRetry documents the defaults.
type RetrySettings struct {
	// MaxRetries is the number of retries after the first attempt; 0 = one attempt.
	MaxRetries int
	// InitialBackoff is the wait before the first retry.
	InitialBackoff time.Duration
	// MaxBackoff caps every wait; an upstream asking for longer ends the sequence.
	MaxBackoff time.Duration
	// BackoffFactor multiplies the wait after each retry.
	BackoffFactor float64
	// JitterFactor adds a random fraction (0..JitterFactor) of the wait.
	JitterFactor float64
	// RetryOnStatuses are the upstream statuses that are retried; transport errors
	// are always retried.
	RetryOnStatuses StatusSet
}

// DefaultRetryStatuses are the statuses retried by default.
var DefaultRetryStatuses = []string{"429", "502", "503", "504", "522", "524", "529"}

// DefaultRetry returns the built-in retry settings: 3 retries, 1s initial backoff,
// 30s max, factor 2.0, jitter 0.1, statuses 429/502/503/504/522/524/529 (529 is
// Anthropic's overloaded_error).
func DefaultRetry() RetrySettings {
	return RetrySettings{
		MaxRetries:      3,
		InitialBackoff:  time.Second,
		MaxBackoff:      30 * time.Second,
		BackoffFactor:   2.0,
		JitterFactor:    0.1,
		RetryOnStatuses: MustStatusSet(DefaultRetryStatuses...),
	}
}

// DefaultFirstTokenTimeout is the built-in resilience.first_token_timeout: the
// longest wait from sending a stream's request to its first event that carries
// content. One minute is the stream_idle_timeout's bound applied to the start:
// reasoning models that stream their reasoning send it within seconds (and it
// counts as content), and hidden-reasoning models rarely think past a minute
// before their first token; an upstream silent for longer is retried or failed
// over instead of holding the client. Raise it per provider for models that
// think longer in silence; 0 turns it off.
const DefaultFirstTokenTimeout = time.Minute

// Scope says what one circuit breaker covers.
type Scope string

const (
	// ScopeProvider gives each provider one breaker (the default).
	ScopeProvider Scope = "provider"
	// ScopeModel gives each model of a provider its own breaker.
	ScopeModel Scope = "model"
)

// BreakerSettings tune a circuit breaker. DefaultBreaker documents the defaults.
type BreakerSettings struct {
	// Enabled turns the breaker on; false keeps the thresholds but never checks them.
	Enabled bool
	// Scope is ScopeProvider or ScopeModel.
	Scope Scope
	// FailureOnStatuses are the statuses that count as failures (transport errors
	// and local timeouts always do).
	FailureOnStatuses StatusSet
	// FailureThreshold consecutive failures open the breaker; 0 disables it.
	FailureThreshold int
	// SuccessThreshold consecutive probe successes close it again.
	SuccessThreshold int
	// Timeout is how long it stays open before letting one probe through.
	Timeout time.Duration
	// SlowCallThreshold makes slower calls count as failures; 0 = off.
	SlowCallThreshold time.Duration
}

// DefaultFailureStatuses are the statuses that count as breaker failures by default.
var DefaultFailureStatuses = []string{"429", "5xx"}

// DefaultBreaker returns the built-in breaker settings: enabled, provider scope,
// failures on 429 and 5xx, opens after 5, closes after 2 probe successes, 30s open,
// no slow-call threshold.
func DefaultBreaker() BreakerSettings {
	return BreakerSettings{
		Enabled:           true,
		Scope:             ScopeProvider,
		FailureOnStatuses: MustStatusSet(DefaultFailureStatuses...),
		FailureThreshold:  5,
		SuccessThreshold:  2,
		Timeout:           30 * time.Second,
	}
}

// Active reports whether the breaker is checked at all.
func (s BreakerSettings) Active() bool { return s.Enabled && s.FailureThreshold > 0 }
