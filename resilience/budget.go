package resilience

import "sync/atomic"

// Budget caps concurrent retries at a share of in-flight requests, with a floor, so
// that a storm of failures cannot multiply the load on a struggling upstream (as
// Envoy's retry budget does). A nil Budget allows every retry.
type Budget struct {
	percent  float64
	minConc  int64
	inflight atomic.Int64
	retrying atomic.Int64
}

// Default retry budget: 20 % of in-flight requests, at least 3 concurrent retries.
const (
	DefaultBudgetPercent        = 20.0
	DefaultBudgetMinConcurrency = 3
)

// NewBudget returns a budget; percent is 0-100.
func NewBudget(percent float64, minConcurrency int) *Budget {
	return &Budget{percent: percent, minConc: int64(minConcurrency)}
}

func (b *Budget) enter() {
	if b != nil {
		b.inflight.Add(1)
	}
}

func (b *Budget) leave() {
	if b != nil {
		b.inflight.Add(-1)
	}
}

// acquire takes a retry slot if the budget allows one.
func (b *Budget) acquire() bool {
	if b == nil {
		return true
	}
	limit := max(b.minConc, int64(float64(b.inflight.Load())*b.percent/100))
	for {
		cur := b.retrying.Load()
		if cur >= limit {
			return false
		}
		if b.retrying.CompareAndSwap(cur, cur+1) {
			return true
		}
	}
}

func (b *Budget) release() {
	if b != nil {
		b.retrying.Add(-1)
	}
}
