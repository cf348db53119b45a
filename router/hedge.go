package router

import (
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/switchyard/switchyard/internal/panics"
)

// Outcomes of a hedge decision (the outcome label of switchyard_hedges_total).
const (
	// HedgeBackupWon: the backup produced content first; the primary was cancelled.
	HedgeBackupWon = "backup_won"
	// HedgePrimaryWon: the primary produced content first; the backup was cancelled.
	HedgePrimaryWon = "primary_won"
	// HedgeBothFailed: neither answered; the chain moves on past both.
	HedgeBothFailed = "both_failed"
	// HedgeCapped: the primary was slow but the cap allowed no hedge.
	HedgeCapped = "capped"
)

// hedgeEvery is the cap on hedges: at most one per this many requests to a
// virtual model, so that an overloaded primary is not doubled.
const hedgeEvery = 10

// HedgeObserver hears hedge decisions, for metrics; an Observer that also
// implements it is told of each one.
type HedgeObserver interface {
	// Hedge reports one hedge decision for virtualModel with one of the Hedge* outcomes.
	Hedge(virtualModel, outcome string)
}

// hedgeCredit caps a chain's hedges at one per hedgeEvery requests: each request
// earns one unit, a hedge costs hedgeEvery, and credit never exceeds one hedge
// (so a quiet spell does not buy a burst of hedges). The zero value has one
// hedge's credit.
type hedgeCredit struct {
	mu    sync.Mutex
	spent int // units missing from a full credit
}

// arrive credits one request.
func (h *hedgeCredit) arrive() {
	h.mu.Lock()
	if h.spent > 0 {
		h.spent--
	}
	h.mu.Unlock()
}

// take spends a hedge's credit, if there is one.
func (h *hedgeCredit) take() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.spent > 0 {
		return false
	}
	h.spent = hedgeEvery
	return true
}

// hedges reports whether the chain races its first two targets.
func (c *chain) hedges() bool {
	return c.vm.HedgeAfter > 0 && len(c.routes) > 1 && c.failsOver()
}

// racer is what one side of a hedge returned.
type racer[T any] struct {
	i   int
	v   T
	err error
	// panicked is a panic of the attempt's own goroutine, raised again in the
	// request's once both sides have returned, where the request's recovery
	// answers Internal: a provider's bug in a hedged call ends that call, not the
	// process.
	panicked *panics.Carried
}

// hedge runs the chain's first target and, if it has produced nothing within
// hedge_after (no content event for a stream, no answer for a unary call), the
// second one too, when the cap allows. The first success wins and the other is
// cancelled at once (its upstream request closed, an answer it produced anyway
// dropped); hedge returns only once both have returned, so nothing of the loser
// outlives the call. It says which route answered (or failed last) and whether
// the second target was used, in which case a failure means both failed.
func hedge[T any](r *Router, ctx context.Context, c *chain, first int, call Call,
	try attempt[T], drop func(T)) (T, Route, error, bool) {
	routes := [2]Route{c.at(first, 0), c.at(first, 1)}
	c.credit.arrive()
	results := make(chan racer[T], 2)
	var cancels [2]context.CancelFunc
	start := func(i int) {
		actx, cancel := context.WithCancel(ctx)
		cancels[i] = cancel
		route := routes[i]
		a := newAttempt(call, route, i)
		go func() {
			res := racer[T]{i: i}
			defer func() {
				if p := recover(); p != nil {
					res.panicked = panics.Carry(p, "running a hedged attempt in its own goroutine")
				}
				// actx carries the lending of the buffer a long body lies in
				// (bufpool.With): it stays reachable until the attempt is over, even
				// after a panic left the buffer to be reclaimed once unreachable.
				runtime.KeepAlive(actx)
				results <- res
			}()
			res.v, res.err = try(actx, route, r.targets[route.Provider], a)
		}()
	}
	winner := -1
	defer func() {
		// Every call but the winner's ends here; the winner's context lives on with
		// its answer (a stream reads from it) and ends with the request's.
		for i, cancel := range cancels {
			if cancel != nil && i != winner {
				cancel()
			}
		}
	}()
	start(0)

	fired := make(chan struct{})
	tctx, stopTimer := context.WithCancel(ctx)
	defer stopTimer()
	after := c.vm.HedgeAfter
	go func() {
		if r.clock.Sleep(tctx, after) == nil {
			close(fired)
		}
	}()

	if res, ok := awaitPrimary(results, fired); ok {
		// The primary finished (either way) before hedge_after: no hedge.
		stopTimer()
		res.raise()
		r.record(routes[0], res.err)
		winner = 0
		return res.v, routes[0], res.err, false
	}
	obs, _ := r.obs.(HedgeObserver)
	note := func(outcome string) {
		if obs != nil {
			obs.Hedge(c.vm.Source, outcome)
		}
	}
	if !c.credit.take() {
		note(HedgeCapped)
		r.log.Debug("hedge capped", "virtual_model", c.vm.Source, "primary", routes[0].String(),
			"after_ms", float64(after)/float64(time.Millisecond), "request_id", call.RequestID)
		res := <-results
		res.raise()
		r.record(routes[0], res.err)
		winner = 0
		return res.v, routes[0], res.err, false
	}
	if call.Trace != nil {
		call.Trace.Hedged = true // before the backup starts: no attempt is counting yet
	}
	r.log.Debug("hedging", "virtual_model", c.vm.Source, "primary", routes[0].String(), "backup", routes[1].String(),
		"after_ms", float64(after)/float64(time.Millisecond), "request_id", call.RequestID)
	start(1)

	var won *racer[T]
	var failed []racer[T]
	var panicked *racer[T]
	for range 2 {
		res := <-results
		if res.panicked != nil {
			panicked = &res
			cancels[1-res.i]() // no answer is taken from a call that panicked
			continue
		}
		r.record(routes[res.i], res.err)
		switch {
		case panicked != nil:
			if res.err == nil && drop != nil {
				drop(res.v)
			}
		case won != nil:
			// The loser, cancelled: whatever it produced is dropped — but an answer it
			// produced anyway was billed: its usage goes to the trace, for the ledger.
			if res.err == nil && call.Trace != nil {
				if u, ok := call.answerUsage(res.v); ok {
					call.Trace.Lost = append(call.Trace.Lost, CutUsage{Route: routes[res.i],
						PromptTokens: u.Prompt, CompletionTokens: u.Completion})
				} else if call.EstPrompt > 0 {
					// A stream that had begun (its first content came), or an
					// answer that does not say: its upstream billed the prompt at
					// least, which is estimated.
					call.Trace.Lost = append(call.Trace.Lost, CutUsage{Route: routes[res.i],
						PromptTokens: int64(call.EstPrompt), Estimated: true})
				}
			}
			if res.err == nil {
				if drop != nil {
					drop(res.v)
				}
			}
		case res.err == nil:
			won = &res
			cancels[1-res.i]()
		default:
			failed = append(failed, res)
		}
	}
	if panicked != nil {
		if won != nil && drop != nil {
			drop(won.v)
		}
		panicked.raise()
	}
	if won != nil {
		outcome := HedgePrimaryWon
		if won.i == 1 {
			outcome = HedgeBackupWon
		}
		winner = won.i
		note(outcome)
		r.log.Debug("hedge decided", "virtual_model", c.vm.Source, "winner", routes[won.i].String(),
			"outcome", outcome, "request_id", call.RequestID)
		return won.v, routes[won.i], nil, won.i == 1
	}
	note(HedgeBothFailed)
	// Both failed: the backup's error stands for the pair, unless the primary's may
	// not fail over (an error the chain would have stopped at).
	last := failed[0]
	if last.i == 0 {
		last = failed[1]
	}
	for _, f := range failed {
		if move, _ := c.vm.Failover.eligible(f.err); f.i == 0 && !move {
			last = f
		}
	}
	r.log.Debug("hedge decided", "virtual_model", c.vm.Source, "outcome", HedgeBothFailed,
		"error", last.err.Error(), "request_id", call.RequestID)
	return last.v, routes[last.i], last.err, true
}

// raise panics again, in the request's goroutine, with what the attempt's
// goroutine panicked with.
func (res *racer[T]) raise() {
	if res.panicked != nil {
		panic(res.panicked)
	}
}

// awaitPrimary waits for the primary's result or the hedge timer, whichever
// comes first; a result already in when the timer fires is taken (select would
// pick either at random): a call already answered starts no backup, which
// would cost a hedge's credit and an upstream call, and could answer a request
// the chain stops at (a 400).
func awaitPrimary[T any](results <-chan racer[T], fired <-chan struct{}) (racer[T], bool) {
	select {
	case res := <-results:
		return res, true
	case <-fired:
		select {
		case res := <-results:
			return res, true
		default:
			return racer[T]{}, false
		}
	}
}
