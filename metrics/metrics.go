// Package metrics exposes what Switchyard does as Prometheus metrics, all prefixed
// switchyard_. Label values are bounded: providers come from the config, and
// models are kept only when Switchyard knows them (others become "other").
package metrics

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/switchyard/switchyard/resilience"
)

// Other replaces model names Switchyard does not know, bounding cardinality.
const Other = "other"

// Metrics holds Switchyard's collectors on its own registry.
type Metrics struct {
	reg   *prometheus.Registry
	known atomic.Pointer[func(string) bool]

	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	ttft     *prometheus.HistogramVec
	inflight *prometheus.GaugeVec
	// inflightBy holds the gauges of the surfaces (Surfaces), made once:
	// WithLabelValues hashes its labels on each call, twice a request.
	inflightBy         [len(Surfaces)]prometheus.Gauge
	attempts           *prometheus.CounterVec
	retries            *prometheus.CounterVec
	failovers          *prometheus.CounterVec
	resumes            *prometheus.CounterVec
	hedges             *prometheus.CounterVec
	breakers           atomic.Pointer[func() []resilience.Entry]
	breakerTransitions *prometheus.CounterVec
	empty              *prometheus.CounterVec
	hidden             *prometheus.CounterVec
	incomplete         *prometheus.CounterVec
	tokens             *prometheus.CounterVec
}

// New registers every collector on a new registry (plus Go and process collectors).
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_requests_total",
		Help: "Requests served, by surface (rest, grpc), endpoint, answering provider and model, status class and stream."},
		[]string{"surface", "endpoint", "provider", "model", "status_class", "stream"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "switchyard_request_duration_seconds",
		Help: "Request latency, whole request (for streams: until the last event).", Buckets: prometheus.ExponentialBuckets(0.005, 2, 14)},
		[]string{"surface", "endpoint", "stream"})
	m.ttft = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "switchyard_time_to_first_token_seconds",
		Help: "Streams: time from the request to its first event.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 12)},
		[]string{"provider", "model"})
	m.inflight = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "switchyard_requests_in_flight",
		Help: "Requests being served."}, []string{"surface"})
	for i, s := range Surfaces {
		m.inflightBy[i] = m.inflight.WithLabelValues(s)
	}
	m.attempts = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_upstream_attempts_total",
		Help: "Upstream HTTP attempts by outcome: success, retryable_status, status, transport_error, timeout, cancelled."},
		[]string{"provider", "model", "outcome"})
	m.retries = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_retries_total",
		Help: "Retries scheduled (attempts after the first, same target)."}, []string{"provider", "model"})
	m.failovers = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_failovers_total",
		Help: "Moves from one virtual-model target to the next, by reason."}, []string{"from", "to", "reason"})
	m.resumes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_stream_resumes_total",
		Help: "Attempts to continue a stream broken after its first byte on the next target (stream_resume), by outcome: spliced, rejected, skipped."},
		[]string{"from", "to", "outcome"})
	m.hedges = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_hedges_total",
		Help: "Hedge decisions (hedge_after) by outcome: backup_won, primary_won, both_failed, capped."},
		[]string{"virtual_model", "outcome"})
	m.breakerTransitions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_breaker_transitions_total",
		Help: "Circuit breaker state changes."}, []string{"provider", "model", "from", "to"})
	m.empty = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_empty_responses_total",
		Help: "Successful-looking upstream answers with nothing in them, by reason: no_choices, empty_stream."},
		[]string{"provider", "reason"})
	m.hidden = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_hidden_errors_total",
		Help: "Errors found inside a 200 (body or first stream event), by the status they were given."},
		[]string{"provider", "status"})
	m.incomplete = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_incomplete_streams_total",
		Help: "Streams that stopped before their final event, by reason: stalled, closed_early, malformed_chunk, error_event, read_error, no_finish_reason, draining."},
		[]string{"provider", "reason"})
	m.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_tokens_total",
		Help: "Tokens from upstream usage, by type: prompt, completion."}, []string{"provider", "model", "type"})
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.ttft, m.inflight, m.attempts, m.retries, m.failovers, m.resumes, m.hedges,
		breakerCollector{m}, m.breakerTransitions, m.empty, m.hidden, m.incomplete, m.tokens,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		f(c)
	}
	none := func(string) bool { return false }
	m.known.Store(&none)
	return m
}

// Handler serves the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	// ContinueOnError: a collector's error drops its series and counts in
	// promhttp_metric_handler_errors_total instead of failing the whole scrape.
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, ErrorHandling: promhttp.ContinueOnError})
}

// Registry is the registry (for tests and embedding).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// SetKnown sets which model names may be label values.
func (m *Metrics) SetKnown(known func(model string) bool) { m.known.Store(&known) }

// Model bounds a model label value.
func (m *Metrics) Model(model string) string {
	if model == "" || (*m.known.Load())(model) {
		return model
	}
	return Other
}

// Request records one finished request.
func (m *Metrics) Request(surface, endpoint, provider, model string, httpStatus int, stream bool, d time.Duration) {
	s := strconv.FormatBool(stream)
	m.requests.WithLabelValues(surface, endpoint, provider, m.Model(model), statusClass(httpStatus), s).Inc()
	m.duration.WithLabelValues(surface, endpoint, s).Observe(d.Seconds())
}

// Surfaces are the surfaces requests arrive on (the surface label's values).
var Surfaces = [...]string{"rest", "grpc"}

// InFlight adds delta to the in-flight gauge.
func (m *Metrics) InFlight(surface string, delta float64) {
	for i, s := range Surfaces {
		if s == surface {
			m.inflightBy[i].Add(delta)
			return
		}
	}
	m.inflight.WithLabelValues(surface).Add(delta)
}

// statusClasses are the status_class label's values, by status / 100.
var statusClasses = [...]string{"0xx", "1xx", "2xx", "3xx", "4xx", "5xx"}

func statusClass(status int) string {
	if c := status / 100; c >= 0 && c < len(statusClasses) {
		return statusClasses[c]
	}
	return strconv.Itoa(status/100) + "xx"
}

// TimeToFirstToken records a stream's time to its first event.
func (m *Metrics) TimeToFirstToken(provider, model string, d time.Duration) {
	m.ttft.WithLabelValues(provider, m.Model(model)).Observe(d.Seconds())
}

// Tokens adds usage.
func (m *Metrics) Tokens(provider, model string, prompt, completion int) {
	mm := m.Model(model)
	m.tokens.WithLabelValues(provider, mm, "prompt").Add(float64(prompt))
	m.tokens.WithLabelValues(provider, mm, "completion").Add(float64(completion))
}

// Attempt implements resilience.Observer.
func (m *Metrics) Attempt(provider, model, outcome string) {
	m.attempts.WithLabelValues(provider, m.Model(model), outcome).Inc()
}

// Retry implements resilience.Observer.
func (m *Metrics) Retry(provider, model string) {
	m.retries.WithLabelValues(provider, m.Model(model)).Inc()
}

// BreakerTransition implements resilience.Observer.
func (m *Metrics) BreakerTransition(provider, model string, from, to resilience.State) {
	m.breakerTransitions.WithLabelValues(provider, m.Model(model), from.String(), to.String()).Inc()
}

// WatchBreakers sets where the breaker-state gauge reads the breakers at scrape time.
func (m *Metrics) WatchBreakers(list func() []resilience.Entry) { m.breakers.Store(&list) }

var breakerStateDesc = prometheus.NewDesc("switchyard_breaker_state",
	"Circuit breaker state: 0 closed, 1 half-open, 2 open (model empty for provider scope; model \"other\": the worst state among models Switchyard does not list). Disabled breakers are not reported.",
	[]string{"provider", "model"}, nil)

// breakerCollector reports every enabled breaker's current state at scrape time.
type breakerCollector struct{ m *Metrics }

func (c breakerCollector) Describe(ch chan<- *prometheus.Desc) { ch <- breakerStateDesc }

// Collect writes one series per provider and bounded model label. Breakers whose
// models share a label (every unknown model becomes "other") are one series
// showing the worst state among them: two series with the same labels would make
// the whole scrape fail.
func (c breakerCollector) Collect(ch chan<- prometheus.Metric) {
	list := c.m.breakers.Load()
	if list == nil {
		return
	}
	type series struct{ provider, model string }
	worst := map[series]resilience.State{}
	var order []series
	for _, e := range (*list)() {
		if !e.Settings.Active() {
			continue
		}
		s := series{e.Provider, c.m.Model(e.Model)}
		st, seen := worst[s]
		if !seen {
			order = append(order, s)
		}
		if !seen || e.State > st {
			worst[s] = e.State
		}
	}
	for _, s := range order {
		ch <- prometheus.MustNewConstMetric(breakerStateDesc, prometheus.GaugeValue, float64(worst[s]), s.provider, s.model)
	}
}

// Failover records a move to the next target.
func (m *Metrics) Failover(from, to, reason string) {
	m.failovers.WithLabelValues(from, to, reason).Inc()
}

// Hedge records a hedge decision for a virtual model.
func (m *Metrics) Hedge(virtualModel, outcome string) {
	m.hedges.WithLabelValues(virtualModel, outcome).Inc()
}

// StreamResume records an attempt to continue a broken stream on the next target.
func (m *Metrics) StreamResume(from, to, outcome string) {
	m.resumes.WithLabelValues(from, to, outcome).Inc()
}

// Empty records an empty success.
func (m *Metrics) Empty(provider, reason string) { m.empty.WithLabelValues(provider, reason).Inc() }

// Hidden records an error hidden in a 200.
func (m *Metrics) Hidden(provider string, status int) {
	m.hidden.WithLabelValues(provider, strconv.Itoa(status)).Inc()
}

// Incomplete records a stream that stopped before its final event.
func (m *Metrics) Incomplete(provider, reason string) {
	m.incomplete.WithLabelValues(provider, reason).Inc()
}
