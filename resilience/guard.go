package resilience

import (
	"context"
	"math/rand/v2"
)

// Guard runs one provider's upstream calls through its breakers and retry policy.
type Guard struct {
	obs      Observer
	provider string
	retry    RetrySettings
	breakers *Breakers
	budget   *Budget
	clock    Clock
	rand     func() float64
}

// GuardConfig is what a Guard needs. Clock and Rand default to the real ones.
type GuardConfig struct {
	Provider string
	Retry    RetrySettings
	Breaker  BreakerSettings
	// Budget caps concurrent retries; nil means no cap.
	Budget *Budget
	Clock  Clock
	Rand   func() float64
	// Observer hears attempts, retries and breaker transitions; nil hears nothing.
	Observer Observer
}

// NewGuard returns a Guard.
func NewGuard(c GuardConfig) *Guard {
	if c.Clock == nil {
		c.Clock = SystemClock{}
	}
	if c.Rand == nil {
		c.Rand = rand.Float64
	}
	if c.Observer == nil {
		c.Observer = NopObserver{}
	}
	return &Guard{provider: c.Provider, retry: c.Retry, breakers: NewBreakers(c.Provider, c.Breaker, c.Clock, c.Observer),
		budget: c.Budget, clock: c.Clock, rand: c.Rand, obs: c.Observer}
}

// Breakers exposes the provider's breakers (for the admin API).
func (g *Guard) Breakers() *Breakers { return g.breakers }

// Call runs call for model: refused at once while the breaker is open, retried as
// the policy says (streams never: once sent they are not re-sent), and recorded as
// one breaker outcome. A slow call counts as a breaker failure but its result is
// still returned. stream marks a streaming call, whose call returns once the first
// event arrived, so its duration is the time to first token.
func (g *Guard) Call(ctx context.Context, model string, stream bool, call func(ctx context.Context, attempt int) error) error {
	b, err := g.breakers.For(model)
	if err != nil {
		return err
	}
	p, wait, ok := b.allow()
	if !ok {
		return &OpenError{Provider: g.provider, Model: model, RetryAfter: wait}
	}
	maxRetries := g.retry.MaxRetries
	if p.probe || stream {
		maxRetries = 0 // a probe is one HTTP attempt; a sent stream is never re-sent
	}
	g.budget.enter()
	_, err = runRetries(ctx, g.retry, maxRetries, g.clock, g.rand, g.budget, func(ctx context.Context, attempt int) error {
		if attempt > 0 {
			g.obs.Retry(g.provider, model)
		}
		err := call(ctx, attempt)
		k, o := classify(err)
		g.obs.Attempt(g.provider, model, outcome(g.retry, k, o))
		return err
	})
	g.budget.leave()
	elapsed := g.clock.Now().Sub(p.start)
	k, o := classify(err)
	b.done(p, k, o, elapsed)
	return err
}
