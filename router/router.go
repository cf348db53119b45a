package router

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/resilience"
)

// Call carries what a request brings besides its body.
type Call struct {
	// IdempotencyKey is the client's Idempotency-Key (already validated). It goes to
	// the first target only: a failover attempt sends a different request.
	IdempotencyKey string
	// RequestID is forwarded upstream as X-Request-Id.
	RequestID string
	// Trace, when set, collects attempts and failovers for the request's log line.
	Trace *Trace
	// IncludeUsage asks streaming upstreams for usage even if the client did not.
	IncludeUsage bool
	// Op names the endpoint kind in spans ("chat" when empty, "messages",
	// "embeddings", ...).
	Op string
	// EstTokens is the call's estimated token cost, for targets' limiters.
	EstTokens int
	// EstPrompt is the estimate of the request's prompt tokens: what a hedge's
	// losing side that answered is billed when its answer does not say (a stream,
	// cancelled after its first content, before its usage).
	EstPrompt int
	// Betas are the client's anthropic-beta values, for every attempt.
	Betas []string
	// AnswerUsage reads what a non-stream answer says it used (nil: a chat
	// completion's usage; false: it does not say). It corrects the targets' tpm
	// charge (else the estimate stands) and bills a hedge's losing side that
	// answered anyway (Trace.Lost). The endpoint knows its answer's type.
	AnswerUsage func(answer any) (Usage, bool)
}

// Usage is the tokens an answer says it used.
type Usage struct{ Prompt, Completion int64 }

// Router resolves models (virtual models first, then provider models) and runs each
// call through its target's guard, failing over along virtual model chains.
type Router struct {
	log     *slog.Logger
	reg     *registry
	targets map[string]Target
	health  map[string]*providerHealth
	virtual atomic.Pointer[virtualState]
	adminMu sync.Mutex
	obs     Observer
	tracer  trace.Tracer
	clock   resilience.Clock // hedge timers and request health
}

type virtualState struct {
	table virtualTable
	list  []VirtualModel
}

// Option sets something of a Router at New.
type Option func(*Router)

// WithObserver sets who hears routing events (nobody otherwise).
func WithObserver(o Observer) Option { return func(r *Router) { r.obs = o } }

// WithTracer sets the tracer of the client span each upstream attempt gets;
// without it nothing is traced.
func WithTracer(t trace.Tracer) Option { return func(r *Router) { r.tracer = t } }

// WithClock sets the clock hedge timers and request health run on (the real
// clock otherwise, nil included).
func WithClock(c resilience.Clock) Option {
	return func(r *Router) {
		if c != nil {
			r.clock = c
		}
	}
}

// New returns a Router over targets. Call Discover before serving.
func New(log *slog.Logger, targets []Target, opts ...Option) *Router {
	r := &Router{log: log, reg: newRegistry(targets), targets: map[string]Target{}, health: map[string]*providerHealth{},
		obs: nopObserver{}, clock: resilience.SystemClock{}}
	for _, o := range opts {
		o(r)
	}
	for _, t := range targets {
		if t.Guard == nil {
			t.Guard = resilience.NewGuard(resilience.GuardConfig{Provider: t.Provider.Name(),
				Retry: resilience.DefaultRetry(), Breaker: resilience.DefaultBreaker()})
		}
		r.targets[t.Provider.Name()] = t
		r.health[t.Provider.Name()] = &providerHealth{}
	}
	r.virtual.Store(&virtualState{table: virtualTable{}})
	return r
}

// SetVirtualModels validates vms and, if all are valid, replaces the virtual models
// for the next request. It reports every problem at once.
func (r *Router) SetVirtualModels(vms []VirtualModel) error {
	table, err := buildTable(vms, r.targets)
	if err != nil {
		return err
	}
	r.virtual.Store(&virtualState{table: table, list: slices.Clone(vms)})
	return nil
}

// VirtualModels returns the current virtual models.
func (r *Router) VirtualModels() []VirtualModel { return slices.Clone(r.virtual.Load().list) }

// Discover refreshes every provider's model list.
func (r *Router) Discover(ctx context.Context, timeout time.Duration) {
	r.reg.discover(ctx, r.log, timeout, false)
}

// Recheck re-runs discovery every interval for the providers whose last discovery
// failed, until ctx ends.
func (r *Router) Recheck(ctx context.Context, interval, timeout time.Duration) {
	if interval <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.reg.discover(ctx, r.log, timeout, true)
		}
	}
}

// Providers reports each provider's discovery state.
func (r *Router) Providers() []ProviderStatus { return r.reg.status() }

// Resolve maps a provider model name to its route (virtual models aside).
func (r *Router) Resolve(model string) (Route, error) { return r.reg.resolve(model) }

// Known reports whether model is a listed provider model or a virtual model
// (lock-free; used to bound metric labels).
func (r *Router) Known(model string) bool {
	if _, ok := r.reg.snap.Load().bare[model]; ok {
		return true
	}
	_, ok := r.virtual.Load().table[model]
	return ok
}

// Models lists every routable model: provider models, then virtual models.
func (r *Router) Models() []Model {
	out := r.reg.list()
	for _, vm := range r.virtual.Load().list {
		out = append(out, Model{ID: vm.Source, OwnedBy: "switchyard"})
	}
	return out
}

// attempt calls one target; it is handed what that target's call carries (the
// provider-local model, the request's ids), and returns what the target answered.
// The endpoint's own body is the closure's: walk never sees it.
type attempt[T any] func(ctx context.Context, route Route, t Target, a providers.Attempt) (T, error)

// newAttempt is what the i-th target of a walk gets: the client's Idempotency-Key
// goes to the first only (a failover attempt sends another request).
func newAttempt(call Call, route Route, i int) providers.Attempt {
	a := providers.Attempt{Model: route.Model, RequestID: call.RequestID, IncludeUsage: call.IncludeUsage, Betas: call.Betas}
	if i == 0 {
		a.IdempotencyKey = call.IdempotencyKey
	}
	return a
}

// walk runs try on the target(s) serving model and says which route answered
// (or failed last). A chain with hedge_after races its first two targets (see
// hedge); drop frees an answer that lost the race (nil: nothing to free).
func walk[T any](r *Router, ctx context.Context, model string, call Call, try attempt[T], drop func(T)) (T, Route, error) {
	var zero T
	c := r.virtual.Load().table[model]
	if c == nil {
		route, err := r.reg.resolve(model)
		if err != nil {
			return zero, Route{}, err
		}
		v, err := try(ctx, route, r.targets[route.Provider], newAttempt(call, route, 0))
		r.record(route, err)
		return v, route, err
	}
	first := c.first()
	backups, moved := 0, false
	var last Route
	var lastErr error
	var soonest saturated
	for i := 0; i < len(c.routes); i++ {
		route := c.at(first, i)
		if i > 0 && c.vm.Failover.MaxAttempts > 0 && backups >= c.vm.Failover.MaxAttempts {
			break
		}
		var v T
		var err error
		if i == 0 && c.hedges() {
			var raced bool
			if v, route, err, raced = hedge(r, ctx, c, first, call, try, drop); raced {
				i, moved = 1, true // both of the first two targets were tried
			}
		} else {
			v, err = try(ctx, route, r.targets[route.Provider], newAttempt(call, route, i))
			r.record(route, err)
		}
		if err == nil {
			return v, route, nil
		}
		last, lastErr = route, err
		soonest.keep(route, err)
		if ctx.Err() != nil || !c.failsOver() {
			return zero, route, err
		}
		move, skipped := c.vm.Failover.eligible(err)
		if !move {
			return zero, route, err
		}
		if i > 0 && !skipped {
			backups++
		}
		if i+1 < len(c.routes) && !(c.vm.Failover.MaxAttempts > 0 && backups >= c.vm.Failover.MaxAttempts) {
			moved = true
			next := c.at(first, i+1).String()
			reason := failoverReason(err, skipped)
			r.obs.Failover(route.String(), next, reason)
			failoverEvent(ctx, route.String(), next, reason)
			if call.Trace != nil {
				call.Trace.Failovers++
			}
			r.log.Debug("failing over", "virtual_model", model, "from", route.String(), "to", next,
				"reason", reason, "error", err.Error(), "request_id", call.RequestID)
		}
	}
	if moved {
		if soonest.err != nil && errors.Is(lastErr, ErrTargetSaturated) {
			last, lastErr = soonest.route, soonest.err // the wait a client is told: until the first target frees
		}
		// The chain was spent: clients should not walk it again on their own.
		return zero, last, &resilience.SequenceError{Attempts: backups + 1, Err: lastErr}
	}
	return zero, last, lastErr
}

// record feeds the request-health window the admin API reports. Skipped targets
// (open breaker, at their limits) and cancellations are not requests to the provider; every other
// error counts, upstream 4xx included: they never trip a breaker, yet show a
// provider failing on real calls.
func (r *Router) record(route Route, err error) {
	if notCalled(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return
	}
	r.health[route.Provider].record(route.Model, err != nil, r.clock.Now())
}

// Chat runs a non-stream chat completion and says which route answered.
func (r *Router) Chat(ctx context.Context, body *pb.ChatCompletionRequest, call Call) (*pb.ChatCompletion, Route, error) {
	return Unary(r, ctx, body.GetModel(), call, func(ctx context.Context, t Target, a providers.Attempt) (*pb.ChatCompletion, error) {
		return t.Provider.Chat(ctx, &providers.Request{Body: body, Attempt: a})
	})
}

// Stream opens a streaming chat completion; it returns once the first event arrived,
// so that failures before it (an error status, a reset, an in-band error as the
// first event, an empty stream) are retried on the target and then fail over, and
// nothing has reached the client yet. The stream it returns reports its end to the
// target's breaker: a stream that breaks after its first event is a failure of
// that target (the client still gets the explicit error; nothing is re-sent),
// unless the virtual model resumes streams (see resumeStream).
func (r *Router) Stream(ctx context.Context, body *pb.ChatCompletionRequest, call Call) (providers.Stream, Route, error) {
	var triedMu sync.Mutex // a hedge tries two targets at once
	var tried []Route
	s, route, err := Streaming(r, ctx, body.GetModel(), call, func(ctx context.Context, t Target, a providers.Attempt) (providers.Stream, error) {
		triedMu.Lock()
		if rt := (Route{Provider: t.Provider.Name(), Model: a.Model}); !slices.Contains(tried, rt) {
			tried = append(tried, rt) // once per target: a retry on it opens it again
		}
		triedMu.Unlock()
		return t.Provider.Stream(ctx, &providers.Request{Body: body, Attempt: a})
	}, func(s providers.Stream) { s.Close() }, finished)
	if c := r.virtual.Load().table[body.GetModel()]; err == nil && c != nil && c.vm.MaxResumes > 0 && resumeOK(body) {
		s = r.resumable(ctx, body, call, s, route, c.remaining(tried), c.vm.MaxResumes)
	}
	return s, route, err
}

// Breakers lists every provider's circuit breakers, by provider name.
func (r *Router) Breakers() []resilience.Entry {
	var out []resilience.Entry
	for _, name := range r.reg.order {
		out = append(out, r.targets[name].Guard.Breakers().List()...)
	}
	return out
}
