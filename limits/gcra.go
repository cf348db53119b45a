package limits

import "time"

// rate is one GCRA limit of n units per period (see the package doc). Instants
// are nanoseconds since the Unix epoch.
type rate struct {
	n        int64
	period   int64
	interval int64 // period / n, the time one unit takes to come back
}

func newRate(n int) rate {
	p := int64(Period)
	i := p / int64(n)
	if i < 1 {
		i = 1
	}
	return rate{n: int64(n), period: p, interval: i}
}

// take charges cost units at now against tat. It returns the new tat and the
// status after the charge when admitted; when refused, tat unchanged, the status
// as it is and how long until the charge would fit. A cost above the limit is
// charged as the whole limit (it fits once the limit is full).
func (r rate) take(tat, now int64, cost int) (next int64, ok bool, retry time.Duration, st Status) {
	c := min(int64(cost), r.n)
	base := max(tat, now)
	next = base + c*r.interval
	if next-now > r.period {
		return tat, false, time.Duration(next - now - r.period), r.status(base, now)
	}
	return next, true, 0, r.status(next, now)
}

// status is the limit's state when its tat is tat.
func (r rate) status(tat, now int64) Status {
	used := max(tat-now, 0)
	return Status{Limit: int(r.n), Remaining: int((r.period - min(used, r.period)) / r.interval), Reset: time.Duration(used)}
}

// adjust moves tat by delta units (negative gives units back).
func (r rate) adjust(tat, now int64, delta int) int64 {
	if delta > 0 {
		return max(tat, now) + int64(delta)*r.interval
	}
	return tat + int64(delta)*r.interval
}
