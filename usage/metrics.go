package usage

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Metrics are the ledger's Prometheus collectors. A nil *Metrics counts nothing.
type Metrics struct {
	writtenTotal *prometheus.CounterVec
	droppedTotal *prometheus.CounterVec
	batchSeconds *prometheus.HistogramVec
	prunedTotal  prometheus.Counter
}

// NewMetrics registers the ledger's collectors on reg:
// switchyard_usage_records_written_total, switchyard_usage_records_dropped_total{reason}
// (queue_full, store_error, shutdown_deadline), switchyard_usage_store_write_seconds{result}
// and switchyard_usage_records_pruned_total (deleted past usage.retention).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		writtenTotal: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_usage_records_written_total",
			Help: "Usage records written to the usage store."}, nil),
		droppedTotal: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_usage_records_dropped_total",
			Help: "Usage records dropped, by reason: queue_full (the store is slower than traffic), store_error, shutdown_deadline."},
			[]string{"reason"}),
		batchSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "switchyard_usage_store_write_seconds",
			Help: "Usage store batch writes, by result (ok, error).", Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10)},
			[]string{"result"}),
		prunedTotal: prometheus.NewCounter(prometheus.CounterOpts{Name: "switchyard_usage_records_pruned_total",
			Help: "Usage records deleted because they were older than usage.retention."}),
	}
	reg.MustRegister(m.writtenTotal, m.droppedTotal, m.batchSeconds, m.prunedTotal)
	for _, r := range []string{DropQueueFull, DropStoreError, DropShutdown} {
		m.droppedTotal.WithLabelValues(r)
	}
	m.writtenTotal.WithLabelValues()
	return m
}

func (m *Metrics) written(n int) {
	if m != nil {
		m.writtenTotal.WithLabelValues().Add(float64(n))
	}
}

func (m *Metrics) pruned(n int64) {
	if m != nil {
		m.prunedTotal.Add(float64(n))
	}
}

func (m *Metrics) dropped(reason string, n int) {
	if m != nil {
		m.droppedTotal.WithLabelValues(reason).Add(float64(n))
	}
}

func (m *Metrics) batch(d time.Duration, err error) {
	if m == nil {
		return
	}
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.batchSeconds.WithLabelValues(result).Observe(d.Seconds())
}

// DroppedCount is the drop counter of one reason (for tests and diagnostics).
func (m *Metrics) DroppedCount(reason string) float64 {
	var out dto.Metric
	_ = m.droppedTotal.WithLabelValues(reason).Write(&out)
	return out.GetCounter().GetValue()
}
