package usage

import (
	"context"
	"sync"
	"time"
)

// Budget periods (a virtual key's budget_period).
const (
	PeriodDay   = "day"
	PeriodMonth = "month"
)

// PeriodStart is the start (UTC) of the period that holds t.
func PeriodStart(period string, t time.Time) time.Time {
	t = t.UTC()
	if period == PeriodMonth {
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// Totals keeps running spend per key and period start. Memory is the
// single-replica implementation; a shared one (Redis, when replicas share state)
// implements the same two calls so that every replica sees one total.
type Totals interface {
	// Add adds usd to key's total of the period starting at start.
	Add(key, period string, start time.Time, usd float64)
	// Get is key's total of the period starting at start.
	Get(key, period string, start time.Time) float64
}

// Seeder is implemented by Totals shared by several replicas: Seed sets a
// total from the store only where none is kept yet, so that each replica's
// start does not add the store's sums again.
type Seeder interface {
	Seed(key, period string, start time.Time, usd float64)
}

// Spend is the running spend per key for budgets: updated from each record as it
// is made, seeded from the store at start, never recomputed from the table on the
// request path.
type Spend struct {
	totals Totals
	now    func() time.Time
}

// NewSpend keeps totals in t (nil: in memory), reading the time from now (nil: time.Now).
func NewSpend(t Totals, now func() time.Time) *Spend {
	if t == nil {
		t = NewMemory()
	}
	if now == nil {
		now = time.Now
	}
	return &Spend{totals: t, now: now}
}

// Add counts a request's cost at time at towards every period of key.
func (s *Spend) Add(key string, usd float64, at time.Time) {
	for _, p := range []string{PeriodDay, PeriodMonth} {
		s.totals.Add(key, p, PeriodStart(p, at), usd)
	}
}

// Spent is what key spent so far in the current period.
func (s *Spend) Spent(key, period string) float64 {
	return s.totals.Get(key, period, PeriodStart(period, s.now()))
}

// Over reports whether key has spent its budget of usd in the current period
// (a budget of 0 or less is none). resets is when the period ends.
func (s *Spend) Over(key string, usd float64, period string) (over bool, spent float64, resets time.Time) {
	if usd <= 0 || (period != PeriodDay && period != PeriodMonth) {
		return false, 0, time.Time{}
	}
	now := s.now()
	start := PeriodStart(period, now)
	spent = s.totals.Get(key, period, start)
	resets = start.AddDate(0, 0, 1)
	if period == PeriodMonth {
		resets = start.AddDate(0, 1, 0)
	}
	return spent >= usd, spent, resets
}

// SpendSource is what Seed reads: the spend per key since a time (a Store).
type SpendSource interface {
	SpendSince(ctx context.Context, t time.Time) (map[string]float64, error)
}

// Seed loads the current day's and month's spend per key from the store (once,
// at start, before serving).
func (s *Spend) Seed(ctx context.Context, st SpendSource) error {
	now := s.now()
	for _, p := range []string{PeriodDay, PeriodMonth} {
		start := PeriodStart(p, now)
		sums, err := st.SpendSince(ctx, start)
		if err != nil {
			return err
		}
		sd, shared := s.totals.(Seeder)
		for key, usd := range sums {
			if shared {
				sd.Seed(key, p, start, usd)
			} else {
				s.totals.Add(key, p, start, usd)
			}
		}
	}
	return nil
}

// Memory keeps totals in this process.
type Memory struct {
	mu sync.Mutex
	m  map[memKey]float64
}

type memKey struct {
	key, period string
	start       int64
}

// NewMemory is an empty in-memory Totals.
func NewMemory() *Memory { return &Memory{m: map[memKey]float64{}} }

// Add implements Totals; totals of earlier periods are forgotten.
func (m *Memory) Add(key, period string, start time.Time, usd float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := memKey{key, period, start.Unix()}
	if _, ok := m.m[k]; !ok {
		for old := range m.m {
			if old.key == key && old.period == period && old.start < k.start {
				delete(m.m, old)
			}
		}
	}
	m.m[k] += usd
}

// Get implements Totals.
func (m *Memory) Get(key, period string, start time.Time) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.m[memKey{key, period, start.Unix()}]
}
