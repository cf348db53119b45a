package resilience

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
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
// the policy says, and recorded as one breaker outcome when it returns. A slow
// call counts as a breaker failure but its result is still returned. Streams use
// Stream, whose outcome waits for the stream's end.
func (g *Guard) Call(ctx context.Context, model string, call func(ctx context.Context, attempt int) error) error {
	return g.call(ctx, model, g.retry.MaxRetries, call)
}

// CallOnce is Call with no retry whatever the retry settings say: for calls that
// must not be sent twice (a passthrough POST without an Idempotency-Key). The
// breaker admits and counts it as it does any call.
func (g *Guard) CallOnce(ctx context.Context, model string, call func(ctx context.Context, attempt int) error) error {
	return g.call(ctx, model, 0, call)
}

func (g *Guard) call(ctx context.Context, model string, maxRetries int, call func(ctx context.Context, attempt int) error) error {
	b, p, elapsed, err := g.run(ctx, model, maxRetries, call)
	if b != nil {
		k, o := classify(err)
		b.done(p, k, o, elapsed)
	}
	return err
}

// Finish records how a stream opened by Stream ended: nil for a complete stream,
// otherwise the error that ended it. A failure the classifier counts (a cut, a
// stall, a broken or in-band error after the first event) is a breaker failure; a
// cancellation (the client left) counts as nothing. Only the first call counts.
type Finish func(err error)

// Stream opens a stream for model: call returns once the stream's first event has
// arrived, so until then it is retried exactly like a unary call (statuses,
// backoff, Retry-After, budget; a probe is one attempt). A failure before the
// first event is the sequence's breaker outcome at once. Once call succeeds, the
// outcome waits for the stream's end: the returned Finish must be called exactly
// once when it ends. The breaker's permit is held until then, so a half-open
// breaker's probe is the whole stream, and a call's result counts only in the
// breaker period that admitted it. The slow-call threshold measures the time to
// the first event.
func (g *Guard) Stream(ctx context.Context, model string, call func(ctx context.Context, attempt int) error) (Finish, error) {
	b, p, elapsed, err := g.run(ctx, model, g.retry.MaxRetries, call)
	if b == nil {
		return nil, err
	}
	if err != nil {
		k, o := classify(err)
		b.done(p, k, o, elapsed)
		return nil, err
	}
	var once sync.Once
	return func(end error) {
		once.Do(func() {
			k, o := classify(end)
			b.done(p, k, o, elapsed)
		})
	}, nil
}

// run admits the call and runs its retry sequence of at most maxRetries
// retries; a nil breaker means it was refused (err says why) and there is
// nothing to record.
func (g *Guard) run(ctx context.Context, model string, maxRetries int, call func(ctx context.Context, attempt int) error) (*Breaker, permit, time.Duration, error) {
	b, err := g.breakers.For(model)
	if err != nil {
		return nil, permit{}, 0, err
	}
	p, wait, ok := b.allow()
	if !ok {
		return nil, permit{}, 0, &OpenError{Provider: g.provider, Model: model, RetryAfter: wait}
	}
	if p.probe {
		maxRetries = 0 // a probe is one HTTP attempt
	}
	g.budget.enter()
	defer g.releaseOnPanic(b, p)
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
	return b, p, g.clock.Now().Sub(p.start), err
}

// releaseOnPanic is run's deferred guard: a call that panics (a provider's bug)
// leaves the retry budget and gives its permit back, counting nothing (it says
// nothing of the upstream), before the panic goes on to the request's recovery.
// Without it a half-open breaker would hold its probe forever, refusing the model
// until an admin reset.
func (g *Guard) releaseOnPanic(b *Breaker, p permit) {
	if r := recover(); r != nil {
		g.budget.leave()
		b.done(p, kindCancelled, nil, g.clock.Now().Sub(p.start))
		panic(r)
	}
}
