package router

import (
	"errors"
	"math/rand/v2"
	"sync/atomic"
)

// strategy picks a chain's first target: a virtual model's strategy as the
// router runs it. A new strategy is a type here and a line in strategies.
type strategy interface {
	// first is the index of the first target to try; the others follow in
	// declared order.
	first() int
	// failsOver says whether the chain moves past a failed target without its
	// failover policy enabled.
	failsOver() bool
}

// strategies builds each strategy for a chain from its targets' weights (0:
// none given), or says why it cannot.
var strategies = map[Strategy]func(weights []int) (strategy, error){
	StrategyFailover:   func([]int) (strategy, error) { return failover{}, nil },
	StrategyRoundRobin: func(w []int) (strategy, error) { return &roundRobin{n: uint64(len(w))}, nil },
	StrategyWeighted:   newWeighted,
}

// failover always starts at the first target, and moves down the chain.
type failover struct{}

func (failover) first() int      { return 0 }
func (failover) failsOver() bool { return true }

// roundRobin starts each call at the next target in turn.
type roundRobin struct {
	n    uint64
	next atomic.Uint64
}

func (r *roundRobin) first() int    { return int((r.next.Add(1) - 1) % r.n) }
func (*roundRobin) failsOver() bool { return false }

// weighted starts at a target drawn by weight (a target without one: never).
type weighted struct {
	cumulative []int
	total      int
}

func newWeighted(weights []int) (strategy, error) {
	w := &weighted{cumulative: make([]int, len(weights))}
	for i, x := range weights {
		w.total += x
		w.cumulative[i] = w.total
	}
	if w.total == 0 {
		return nil, errors.New("weighted strategy needs a target with a positive weight")
	}
	return w, nil
}

func (w *weighted) first() int {
	x := rand.IntN(w.total)
	for i, cum := range w.cumulative {
		if x < cum {
			return i
		}
	}
	return 0
}

func (*weighted) failsOver() bool { return false }
