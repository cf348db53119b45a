package e2e

import (
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/pgtest"
)

// medianLatency sends n sequential REST chat calls and returns their median latency.
func medianLatency(t *testing.T, g *gateway, n int) time.Duration {
	t.Helper()
	lat := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		resp := post(t, g.base+"/chat/completions", chatBody+"}", "Authorization", "Bearer sk-master")
		_, _ = io.ReadAll(resp.Body)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	return lat[n/2]
}

func droppedMetric(t *testing.T, g *gateway, reason string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + g.app.HTTPAddr() + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`switchyard_usage_records_dropped_total\{reason="` + reason + `"\} (\S+)`).FindSubmatch(b)
	require.NotNil(t, m, "the drop metric is exported")
	v, err := strconv.ParseFloat(string(m[1]), 64)
	require.NoError(t, err)
	return v
}

// TestUsagePostgres: the ledger on a real Postgres records and answers queries
// like SQLite; when Postgres stalls (every server process stopped, connections
// open, nothing answers), inference latency stays within noise of the healthy
// figure, and the records the queue cannot hold are dropped and counted.
func TestUsagePostgres(t *testing.T) {
	pg := pgtest.New(t)
	g := start(t, keysYAML, withYAML(usageYAML+"usage:\n  store: postgres\n  dsn: "+pg.DSN()+
		"\n  queue_size: 100\n  batch_size: 5\n  flush_interval: 5ms\n"))

	healthy := medianLatency(t, g, 60)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(g.logs.String())
		}
	})
	recs := waitRecords(t, g, 60)
	require.Len(t, recs, 60)
	out := getAdmin(t, g, "/admin/v1/usage?since=1h&group_by=key&group_by=model")
	require.EqualValues(t, "60", out["groups"].([]any)[0].(map[string]any)["requests"])
	require.Zero(t, droppedMetric(t, g, "queue_full"), "nothing dropped while Postgres keeps up")

	pg.Pause()
	stalled := medianLatency(t, g, 300)
	dropped := droppedMetric(t, g, "queue_full")
	pg.Resume()
	require.LessOrEqual(t, dropped, float64(300), "only what the queue could not hold")
	t.Logf("median REST chat latency: Postgres healthy %v, stalled %v; records dropped while stalled: %v", healthy, stalled, dropped)
	require.Positive(t, dropped, "a stalled store drops what the queue cannot hold, counted")
	require.Less(t, stalled, 2*healthy+5*time.Millisecond, "a stalled store does not slow inference")
}
