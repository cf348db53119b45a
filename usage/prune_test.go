package usage_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/usage"
)

// A pruner deletes what is older than the retention by its clock, counts it,
// and keeps the rest; with no retention there is no pruner.
func TestPrunerKeepsTheRetention(t *testing.T) {
	require.Nil(t, usage.NewPruner(usage.PrunerConfig{}), "retention 0 keeps every record")

	st, err := usage.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), usage.FileName))
	require.NoError(t, err)
	defer st.Close()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	var recs []usage.Record
	for i, age := range []time.Duration{40 * 24 * time.Hour, 33 * 24 * time.Hour, 30 * 24 * time.Hour, time.Hour} {
		recs = append(recs, usage.Record{Time: now.Add(-age), RequestID: string(rune('a' + i)), Surface: usage.SurfaceREST,
			Endpoint: usage.EndpointChat, KeyID: "k", Model: "m", Status: 200})
	}
	require.NoError(t, st.Write(context.Background(), recs))

	reg := prometheus.NewRegistry()
	m := usage.NewMetrics(reg)
	p := usage.NewPruner(usage.PrunerConfig{Store: st, Retention: 32 * 24 * time.Hour, Metrics: m,
		Now: func() time.Time { return now }})
	n, err := p.Once(context.Background())
	require.NoError(t, err)
	require.EqualValues(t, 2, n, "the two records older than 32 days")
	n, err = p.Once(context.Background())
	require.NoError(t, err)
	require.Zero(t, n, "nothing left to prune")
	page, err := st.List(context.Background(), usage.ListFilter{PageSize: 10})
	require.NoError(t, err)
	var left []string
	for _, r := range page.Records {
		left = append(left, r.RequestID)
	}
	require.ElementsMatch(t, []string{"c", "d"}, left, "the records within 32 days")
	families, err := reg.Gather()
	require.NoError(t, err)
	pruned := -1.0
	for _, f := range families {
		if f.GetName() == "switchyard_usage_records_pruned_total" {
			pruned = f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	require.EqualValues(t, 2, pruned, "switchyard_usage_records_pruned_total")
}

// Close is safe without Start and twice; Start after Close does nothing.
func TestPrunerCloses(t *testing.T) {
	cfg := usage.PrunerConfig{Store: usage.None{}, Retention: 32 * 24 * time.Hour}
	t.Run("never started", func(t *testing.T) {
		p := usage.NewPruner(cfg)
		p.Close()
		p.Close()
		p.Start()
	})
	t.Run("started", func(t *testing.T) {
		p := usage.NewPruner(cfg)
		p.Start()
		p.Close()
		p.Close()
	})
}
