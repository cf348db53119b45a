package limits

import (
	"context"
	"sync"
	"time"

	"github.com/switchyard/switchyard/router"
)

// Quota is a target's limiter tightened by what its upstream says: a model whose
// rate-limit headers said nothing is left (providers.Exhausted) is skipped, like
// a target at its own limits, until the upstream's reset; other calls go to the
// target's own limits, if any. The view is this replica's: each replica learns
// it from the answers it gets.
type Quota struct {
	provider string
	next     router.TargetLimiter // nil: no limits of its own
	now      func() time.Time

	mu    sync.Mutex
	until map[string]spent // by model
}

type spent struct {
	limit string
	until time.Time
}

// NewQuota wraps provider's own limiter (nil for none); now is the clock (nil:
// time.Now).
func NewQuota(provider string, next router.TargetLimiter, now func() time.Time) *Quota {
	if now == nil {
		now = time.Now
	}
	return &Quota{provider: provider, next: next, now: now, until: map[string]spent{}}
}

// Note records that the upstream has no room for model until until (a
// providers.QuotaObserver).
func (q *Quota) Note(model, limit string, until time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if cur, ok := q.until[model]; !ok || until.After(cur.until) {
		q.until[model] = spent{limit: limit, until: until}
	}
}

// Admit implements router.TargetLimiter.
func (q *Quota) Admit(ctx context.Context, model string, estTokens int) (func(int) error, error) {
	q.mu.Lock()
	s, ok := q.until[model]
	now := q.now()
	if ok && !now.Before(s.until) {
		delete(q.until, model)
		ok = false
	}
	q.mu.Unlock()
	if ok {
		return nil, &router.SaturatedError{Provider: q.provider, Model: model, Limit: s.limit, RetryAfter: s.until.Sub(now)}
	}
	if q.next == nil {
		return func(int) error { return nil }, nil
	}
	return q.next.Admit(ctx, model, estTokens)
}
