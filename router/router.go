package router

import (
	"context"
	"log/slog"
	"time"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/resilience"
)

// Call carries what a request brings besides its body.
type Call struct {
	// IdempotencyKey is the client's Idempotency-Key (already validated).
	IdempotencyKey string
	// RequestID is forwarded upstream as X-Request-Id.
	RequestID string
}

// Router resolves models and calls providers.
type Router struct {
	log     *slog.Logger
	reg     *registry
	targets map[string]Target
}

// New returns a Router over targets. Call Discover before serving.
func New(log *slog.Logger, targets []Target) *Router {
	r := &Router{log: log, reg: newRegistry(targets), targets: map[string]Target{}}
	for _, t := range targets {
		if t.Guard == nil {
			t.Guard = resilience.NewGuard(resilience.GuardConfig{Provider: t.Provider.Name(),
				Retry: resilience.DefaultRetry(), Breaker: resilience.DefaultBreaker()})
		}
		r.targets[t.Provider.Name()] = t
	}
	return r
}

// Discover refreshes every provider's model list.
func (r *Router) Discover(ctx context.Context, timeout time.Duration) {
	r.reg.discover(ctx, r.log, timeout)
}

// Resolve maps a model name to its route.
func (r *Router) Resolve(model string) (Route, error) { return r.reg.resolve(model) }

// Models lists every routable model.
func (r *Router) Models() []Model { return r.reg.list() }

func (r *Router) request(req *pb.ChatCompletionRequest, route Route, call Call) *providers.Request {
	return &providers.Request{Body: req, Model: route.Model, IdempotencyKey: call.IdempotencyKey, RequestID: call.RequestID}
}

// Chat runs a non-stream chat completion and says which route answered.
func (r *Router) Chat(ctx context.Context, req *pb.ChatCompletionRequest, call Call) (*pb.ChatCompletion, Route, error) {
	route, err := r.Resolve(req.GetModel())
	if err != nil {
		return nil, Route{}, err
	}
	t := r.targets[route.Provider]
	preq := r.request(req, route, call)
	var resp *pb.ChatCompletion
	err = t.Guard.Call(ctx, route.Model, false, func(ctx context.Context, _ int) error {
		var err error
		resp, err = t.Provider.Chat(ctx, preq)
		return err
	})
	return resp, route, err
}

// Stream opens a streaming chat completion; it returns once the first event arrived.
func (r *Router) Stream(ctx context.Context, req *pb.ChatCompletionRequest, call Call) (providers.Stream, Route, error) {
	route, err := r.Resolve(req.GetModel())
	if err != nil {
		return nil, Route{}, err
	}
	t := r.targets[route.Provider]
	preq := r.request(req, route, call)
	var s providers.Stream
	err = t.Guard.Call(ctx, route.Model, true, func(ctx context.Context, _ int) error {
		var err error
		s, err = t.Provider.Stream(ctx, preq)
		return err
	})
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
