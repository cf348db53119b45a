package metrics_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/metrics"
	"github.com/switchyard/switchyard/resilience"
)

var active = resilience.BreakerSettings{Enabled: true, FailureThreshold: 5}

func entry(provider, model string, st resilience.State) resilience.Entry {
	return resilience.Entry{Provider: provider, Model: model, Snapshot: resilience.Snapshot{State: st, Settings: active}}
}

// known lists the models Switchyard knows; every other model label is "other".
func known(m *metrics.Metrics, models ...string) {
	set := map[string]bool{}
	for _, k := range models {
		set[k] = true
	}
	m.SetKnown(func(model string) bool { return set[model] })
}

// series gathers one family as `provider/model=value` lines, sorted; the gather
// itself must succeed.
func series(t *testing.T, m *metrics.Metrics, name string) []string {
	t.Helper()
	mfs, err := m.Registry().Gather()
	require.NoError(t, err, "no two series may share their labels")
	var out []string
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, s := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range s.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			out = append(out, fmt.Sprintf("%s/%s=%g", labels["provider"], labels["model"], s.GetGauge().GetValue()))
		}
	}
	sort.Strings(out)
	return out
}

func TestBreakerStateAggregatesModelsSharingALabel(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		entries []resilience.Entry
		want    []string
	}{
		{"unknown models share other, with the worst state", []resilience.Entry{
			entry("up", "made-up-1", resilience.Closed), entry("up", "made-up-2", resilience.Open), entry("up", "made-up-3", resilience.HalfOpen),
			entry("up", "gpt-4o", resilience.HalfOpen), entry("backup", "made-up-1", resilience.Closed),
		}, []string{"backup/other=0", "up/gpt-4o=1", "up/other=2"}},
		{"half-open beats closed", []resilience.Entry{entry("up", "a", resilience.HalfOpen), entry("up", "b", resilience.Closed)},
			[]string{"up/other=1"}},
		{"provider scope", []resilience.Entry{entry("up", "", resilience.Open), entry("backup", "", resilience.Closed)},
			[]string{"backup/=0", "up/=2"}},
		{"disabled breakers are not reported", []resilience.Entry{
			{Provider: "off", Model: "x", Snapshot: resilience.Snapshot{State: resilience.Open}}, entry("up", "x", resilience.Closed),
		}, []string{"up/other=0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := metrics.New()
			known(m, "gpt-4o")
			m.WatchBreakers(func() []resilience.Entry { return tc.entries })
			require.Equal(t, tc.want, series(t, m, "switchyard_breaker_state"))
		})
	}
}

// TestScrapeWithMoreModelsThanTheLabelBound records every metric for many more
// models than Switchyard knows: each scrape must answer 200 with no collector
// error, and no unknown model may become a label value.
func TestScrapeWithMoreModelsThanTheLabelBound(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	known(m, "gpt-4o", "gpt-4o-mini")
	const models = 300
	var entries []resilience.Entry
	for _, provider := range []string{"up", "backup"} {
		for i := range models {
			model := fmt.Sprintf("made-up-%d", i)
			if i < 2 {
				model = []string{"gpt-4o", "gpt-4o-mini"}[i]
			}
			m.Request("rest", "CreateChatCompletion", provider, model, 200+i%4*100, i%2 == 0, time.Millisecond)
			m.TimeToFirstToken(provider, model, time.Millisecond)
			m.Tokens(provider, model, 3, 4)
			m.Attempt(provider, model, "success")
			m.Retry(provider, model)
			m.BreakerTransition(provider, model, resilience.Closed, resilience.Open)
			m.BreakerTransition(provider, model, resilience.Open, resilience.HalfOpen)
			m.Failover(provider+"/gpt-4o", "backup/gpt-4o", "status_5xx") // from and to are configured targets
			m.Empty(provider, "no_choices")
			m.Hidden(provider, 502)
			m.Incomplete(provider, "stalled")
			m.InFlight("rest", 1)
			entries = append(entries, entry(provider, model, resilience.State(i%3)))
		}
	}
	m.WatchBreakers(func() []resilience.Entry { return entries })

	require.Equal(t, []string{"backup/gpt-4o-mini=1", "backup/gpt-4o=0", "backup/other=2", "up/gpt-4o-mini=1", "up/gpt-4o=0", "up/other=2"},
		series(t, m, "switchyard_breaker_state"), "known models and other, per provider")
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	for range 2 { // the same on every scrape
		resp, err := http.Get(srv.URL)
		require.NoError(t, err)
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
		body := string(raw)
		require.NotContains(t, body, `made-up-`)
		for _, family := range []string{"switchyard_requests_total", "switchyard_request_duration_seconds", "switchyard_time_to_first_token_seconds",
			"switchyard_requests_in_flight", "switchyard_upstream_attempts_total", "switchyard_retries_total", "switchyard_failovers_total",
			"switchyard_breaker_state", "switchyard_breaker_transitions_total", "switchyard_empty_responses_total",
			"switchyard_hidden_errors_total", "switchyard_incomplete_streams_total", "switchyard_tokens_total"} {
			require.Contains(t, body, "\n"+family, "every family is served")
		}
		require.True(t, strings.Contains(body, `switchyard_requests_total{endpoint="CreateChatCompletion",model="other",provider="up",status_class="2xx",stream="true",surface="rest"}`))
	}
}

// gathered is one family's series as `label=value:count-or-gauge` lines,
// sorted, naming the one label given.
func gathered(t *testing.T, m *metrics.Metrics, name, label string) []string {
	t.Helper()
	mfs, err := m.Registry().Gather()
	require.NoError(t, err)
	var out []string
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, s := range mf.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == label {
					out = append(out, fmt.Sprintf("%s=%g", l.GetValue(), s.GetGauge().GetValue()+s.GetCounter().GetValue()))
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// In-flight requests are counted per surface, the known ones through gauges
// made once and any other through the vector; status classes are named by
// their hundreds.
func TestInFlightAndStatusClasses(t *testing.T) {
	m := metrics.New()
	m.InFlight("rest", 1)
	m.InFlight("rest", 1)
	m.InFlight("grpc", 1)
	m.InFlight("rest", -1)
	m.InFlight("other", 1)
	require.Equal(t, []string{"grpc=1", "other=1", "rest=1"}, gathered(t, m, "switchyard_requests_in_flight", "surface"))

	for _, st := range []int{200, 201, 404, 429, 502, 0, 99, 600, 1000} {
		m.Request("rest", "chat", "up", "m", st, false, time.Millisecond)
	}
	require.Equal(t, []string{"0xx=2", "10xx=1", "2xx=2", "4xx=2", "5xx=1", "6xx=1"},
		gathered(t, m, "switchyard_requests_total", "status_class"))
}
