package router

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/resilience"
)

// Unary runs one non-stream call of any endpoint kind through the router: model
// resolution (provider/model, bare names, virtual models), chains (failover,
// hedging), the target's guard (retries, breaker), spans, metrics and request
// health. do makes the upstream call for one attempt on one target; the
// endpoint's body is do's own, so a new endpoint kind needs no change here.
func Unary[T any](r *Router, ctx context.Context, model string, call Call,
	do func(ctx context.Context, t Target, a providers.Attempt) (T, error)) (T, Route, error) {
	return walk(r, ctx, model, call, unaryTry(r, call, false, do), nil)
}

// Direct runs one call on the named provider's target without naming a model:
// a passthrough, an arbitrary path under the provider's base URL. It passes
// what Unary's attempts pass (the target's own limits, its guard with the
// provider's breaker, spans, attempt metrics and the trace), once: one attempt
// whatever the retry policy says (a request that must not be sent twice). There
// is no chain to fail over along, and its answers stay out of request health
// (an arbitrary path's error status says nothing of the provider's models). Its
// answer comes back with its error, as do gives them, and with the room the
// target's limits gave the call, held until the caller ends it (Held.End,
// always called: an answer's body is still being read after Direct returns).
func Direct[T any](r *Router, ctx context.Context, provider string, call Call, once bool,
	do func(ctx context.Context, t Target, a providers.Attempt) (T, error)) (T, Held, error) {
	t, ok := r.targets[provider]
	if !ok {
		var zero T
		return zero, Held{}, fmt.Errorf("%w: %q", ErrUnknownProvider, provider)
	}
	route := Route{Provider: provider}
	resp, g, err := tryTarget(r, ctx, call, once, do, route, t, newAttempt(call, route, 0))
	return resp, Held{g}, err
}

// Held is the room a target's limits gave a Direct call (its max_concurrency
// slot), until End gives it back. The zero Held holds nothing.
type Held struct{ g grant }

// End gives the room back; the call's estimate of its tokens stands.
func (h Held) End() { h.g.end(0) }

// unaryTry is one target's part of a non-stream call: its limits, then its
// guard's attempts (one when once), each a span and an attempt's metrics. The
// limits' room is given back with the tokens the answer says it used.
func unaryTry[T any](r *Router, call Call, once bool, do func(ctx context.Context, t Target, a providers.Attempt) (T, error)) attempt[T] {
	return func(ctx context.Context, route Route, t Target, a providers.Attempt) (T, error) {
		resp, g, err := tryTarget(r, ctx, call, once, do, route, t, a)
		g.end(call.usedTokens(resp))
		return resp, err
	}
}

// tryTarget admits one call on t (its limits) and runs its guard's attempts,
// returning the room it was given for the caller to end (a panic ends it here).
func tryTarget[T any](r *Router, ctx context.Context, call Call, once bool,
	do func(ctx context.Context, t Target, a providers.Attempt) (T, error),
	route Route, t Target, a providers.Attempt) (T, grant, error) {
	var resp T
	g, err := r.admit(ctx, t, a, call)
	if err != nil {
		return resp, grant{}, err
	}
	defer g.endOnPanic()
	try := func(ctx context.Context, n int) error {
		began := time.Now()
		ctx, span := r.startAttempt(ctx, route, n, call.Op, false)
		var err error
		resp, err = do(ctx, t, a)
		endAttempt(span, resp, err)
		r.attemptDone(route, n, err, call, began)
		return err
	}
	if once {
		err = t.Guard.CallOnce(ctx, a.Model, try)
	} else {
		err = t.Guard.Call(ctx, a.Model, try)
	}
	return resp, g, err
}

// Streaming opens a stream of any endpoint kind. open must return once the first
// event that carries content has arrived (as providers.Provider.Stream does), so
// that failures before it are retried and fail over with nothing sent to the
// client. watch wraps an opened stream so that its end reaches the target's
// breaker and request health: the wrapper calls end(nil) on a clean end, end(err)
// on an error that ends it, and end(context.Canceled) on Close before either.
// drop closes a stream that lost a hedge race.
func Streaming[S any](r *Router, ctx context.Context, model string, call Call,
	open func(ctx context.Context, t Target, a providers.Attempt) (S, error),
	drop func(S), watch func(S, func(error)) S) (S, Route, error) {
	return walk(r, ctx, model, call, streamTry(r, call, open, watch), drop)
}

// streamTry is one target's part of opening a stream: its limits, then its
// guard's attempts up to the first event, each a span and an attempt's
// metrics; the stream it opens reports its end to the breaker, request health
// and the limits (watch). A resumed stream's continuation opens the same way.
func streamTry[S any](r *Router, call Call, open func(ctx context.Context, t Target, a providers.Attempt) (S, error),
	watch func(S, func(error)) S) attempt[S] {
	return func(ctx context.Context, route Route, t Target, a providers.Attempt) (S, error) {
		var s S
		g, err := r.admit(ctx, t, a, call)
		if err != nil {
			return s, err
		}
		defer g.endOnPanic()
		finish, err := t.Guard.Stream(ctx, a.Model, func(ctx context.Context, n int) error {
			began := time.Now()
			ctx, span := r.startAttempt(ctx, route, n, call.Op, true)
			var err error
			s, err = open(ctx, t, a)
			endAttempt(span, nil, err) // the span covers the request up to the first event
			r.attemptDone(route, n, err, call, began)
			return err
		})
		if err != nil {
			g.end(0)
			var zero S
			return zero, err
		}
		end := r.ended(route, finish)
		var once sync.Once
		report := func(err error) {
			once.Do(func() {
				end(err)
				g.end(0) // a stream's usage is not known here: the estimate stands
			})
		}
		// A stream whose context ends (the client left, or a gRPC client that
		// stopped reading had its upstream released) gives its breaker permit
		// and its limits' room back then, not when its handler next reads or
		// closes it: a handler blocked on a client that reads nothing would hold
		// them as long as that client stays connected.
		stop := context.AfterFunc(ctx, func() { report(context.Canceled) })
		return watch(s, func(err error) {
			stop()
			report(err)
		}), nil
	}
}

// ended is what a stream's end reports: to the breaker (finish), and to route's
// request health (the admin API's window) when it breaks. A stream that breaks
// after its first event, recorded a success when that event arrived, adds a
// failure when it breaks; record ignores cancellation (a client leaving).
func (r *Router) ended(route Route, finish resilience.Finish) func(error) {
	return func(err error) {
		if err != nil {
			r.record(route, err)
		}
		finish(err)
	}
}
