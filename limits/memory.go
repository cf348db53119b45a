package limits

import (
	"context"
	"sync"
	"time"
)

// Memory is the embedded Backend: limit state in this process's memory, so each
// replica counts alone. Idle subjects (fully replenished, nothing in flight) are
// dropped as the map grows, so memory follows the active subjects.
type Memory struct {
	mu       sync.Mutex
	subjects map[string]*memState
	sweepAt  int
}

type memState struct {
	requests, tokens int64 // TATs (ns since the epoch)
	inflight         int
}

// minSweep is the map size below which idle subjects are kept.
const minSweep = 1024

// NewMemory returns an empty in-memory backend.
func NewMemory() *Memory { return &Memory{subjects: map[string]*memState{}, sweepAt: minSweep} }

// Admit implements Backend.
func (m *Memory) Admit(_ context.Context, r Request) (Decision, error) {
	now := r.Now.UnixNano()
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.subjects[r.Subject]
	if st == nil {
		if len(m.subjects) >= m.sweepAt {
			m.sweep(now)
		}
		st = &memState{}
		m.subjects[r.Subject] = st
	}
	var d Decision
	reqTAT, tokTAT := st.requests, st.tokens
	refuse := func(limit string, retry time.Duration) {
		if d.Limit == "" || retry > d.RetryAfter { // the longest wait is the one that matters
			d.Limit, d.RetryAfter = limit, retry
		}
	}
	d.Allowed = true
	if l := r.Limits.RPM; l > 0 {
		next, ok, retry, s := newRate(l).take(reqTAT, now, 1)
		d.Requests, reqTAT = s, next
		if !ok {
			d.Allowed = false
			refuse(Requests, retry)
		}
	}
	if l := r.Limits.TPM; l > 0 {
		next, ok, retry, s := newRate(l).take(tokTAT, now, r.Tokens)
		d.Tokens, tokTAT = s, next
		if !ok {
			refuse(Tokens, retry)
			d.Allowed = false
		}
	}
	if l := r.Limits.MaxConcurrency; l > 0 && d.Allowed && st.inflight >= l {
		d.Allowed, d.Limit, d.RetryAfter = false, Concurrency, 0
	}
	if !d.Allowed {
		// Nothing charged: the statuses are the limits as they stand.
		if l := r.Limits.RPM; l > 0 {
			d.Requests = newRate(l).status(st.requests, now)
		}
		if l := r.Limits.TPM; l > 0 {
			d.Tokens = newRate(l).status(st.tokens, now)
		}
		return d, nil
	}
	st.requests, st.tokens = reqTAT, tokTAT
	st.inflight++
	return d, nil
}

// Release implements Backend.
func (m *Memory) Release(_ context.Context, r Release) error {
	now := r.Now.UnixNano()
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.subjects[r.Subject]
	if st == nil {
		return nil
	}
	if st.inflight > 0 {
		st.inflight--
	}
	if l := r.Limits.TPM; l > 0 && r.TokenDelta != 0 {
		st.tokens = newRate(l).adjust(st.tokens, now, r.TokenDelta)
	}
	if l := r.Limits.RPM; l > 0 && r.Undo {
		st.requests = newRate(l).adjust(st.requests, now, -1)
	}
	return nil
}

// sweep drops idle subjects and sets the size of the next sweep.
func (m *Memory) sweep(now int64) {
	for k, st := range m.subjects {
		if st.inflight == 0 && st.requests <= now && st.tokens <= now {
			delete(m.subjects, k)
		}
	}
	m.sweepAt = max(minSweep, 2*len(m.subjects))
}

// Len is the number of subjects held (for tests).
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.subjects)
}
