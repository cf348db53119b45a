package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// KeyMetrics count requests per virtual key. The key label is the key's id:
// bounded by the keys admins create (not by callers), and off entirely when the
// server is configured so (server.key_metrics: false).
type KeyMetrics struct {
	requests *prometheus.CounterVec
	limited  *prometheus.CounterVec
}

// NewKeyMetrics registers the per-key collectors on m's registry.
func NewKeyMetrics(m *Metrics) *KeyMetrics {
	k := &KeyMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_key_requests_total",
			Help: "Requests made with a virtual key, by key id and status class."}, []string{"key", "status_class"}),
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_key_rate_limited_total",
			Help: "Requests refused by a virtual key's own limits, by key id and limit (requests, tokens, concurrency)."},
			[]string{"key", "limit"}),
	}
	m.reg.MustRegister(k.requests, k.limited)
	return k
}

// Request counts one request of key that ended with httpStatus.
func (k *KeyMetrics) Request(key string, httpStatus int) {
	if k != nil {
		k.requests.WithLabelValues(key, strconv.Itoa(httpStatus/100)+"xx").Inc()
	}
}

// Limited counts one request of key refused by limit.
func (k *KeyMetrics) Limited(key, limit string) {
	if k != nil {
		k.limited.WithLabelValues(key, limit).Inc()
	}
}
