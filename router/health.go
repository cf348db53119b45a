package router

import (
	"sync"
	"time"

	"github.com/switchyard/switchyard/resilience"
)

// healthWindow is the request-health window the admin API reports: ten one-minute
// buckets of requests and failures per model of one provider.
const healthBuckets = 10

type bucket struct {
	minute      int64
	reqs, fails int32
}

type modelHealth [healthBuckets]bucket

type providerHealth struct {
	mu     sync.Mutex
	models map[string]*modelHealth
}

func (h *providerHealth) record(model string, failed bool, now time.Time) {
	minute := now.Unix() / 60
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.models == nil {
		h.models = map[string]*modelHealth{}
	}
	m := h.models[model]
	if m == nil {
		m = &modelHealth{}
		h.models[model] = m
	}
	b := &m[minute%healthBuckets]
	if b.minute != minute {
		*b = bucket{minute: minute}
	}
	b.reqs++
	if failed {
		b.fails++
	}
}

// summary returns the window's totals and a model that keeps failing (at least 3
// failures making up half or more of its requests), if any.
func (h *providerHealth) summary(now time.Time) (reqs, fails int, failing string) {
	oldest := now.Unix()/60 - healthBuckets + 1
	h.mu.Lock()
	defer h.mu.Unlock()
	for name, m := range h.models {
		var r, f int
		for _, b := range m {
			if b.minute >= oldest {
				r += int(b.reqs)
				f += int(b.fails)
			}
		}
		reqs += r
		fails += f
		if f >= 3 && 2*f >= r && (failing == "" || name < failing) {
			failing = name
		}
	}
	return reqs, fails, failing
}

// Provider statuses, as the admin API shows them.
const (
	StatusHealthy     = "Healthy"
	StatusDegraded    = "Degraded"
	StatusCircuitOpen = "Circuit open"
	StatusRecovering  = "Recovering"
	StatusOffline     = "Offline"
)

// ProviderReport is a provider's discovery state, request health and status.
type ProviderReport struct {
	ProviderStatus
	// RecentRequests and RecentFailures cover the last ten minutes.
	RecentRequests, RecentFailures int
	// Status is one of the Status constants; Reason says why it is not Healthy.
	Status, Reason string
}

// Report combines discovery, breakers and request health per provider. Request
// health and breakers can only make a provider's status worse.
func (r *Router) Report() []ProviderReport {
	now := r.clock.Now()
	var out []ProviderReport
	for _, st := range r.reg.status() {
		rep := ProviderReport{ProviderStatus: st, Status: StatusHealthy}
		var failing string
		rep.RecentRequests, rep.RecentFailures, failing = r.health[st.Name].summary(now)
		open, halfOpen := false, false
		for _, b := range r.targets[st.Name].Guard.Breakers().List() {
			open = open || b.State == resilience.Open
			halfOpen = halfOpen || b.State == resilience.HalfOpen
		}
		switch {
		case open:
			rep.Status, rep.Reason = StatusCircuitOpen, "a circuit breaker is open"
		case halfOpen:
			rep.Status, rep.Reason = StatusRecovering, "a circuit breaker is letting probes through"
		case st.LastError != "":
			rep.Status, rep.Reason = StatusOffline, "model discovery failed: "+st.LastError
		case failing != "":
			rep.Status, rep.Reason = StatusDegraded, "model "+failing+" keeps failing"
		}
		out = append(out, rep)
	}
	return out
}
