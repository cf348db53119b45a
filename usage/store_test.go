package usage_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/pgtest"
	"github.com/switchyard/switchyard/usage"
)

// stores opens each real store kind, fresh, for one subtest.
func stores(t *testing.T) map[string]func(t *testing.T) usage.Store {
	var pg *pgtest.Server
	n := 0
	return map[string]func(t *testing.T) usage.Store{
		"sqlite": func(t *testing.T) usage.Store {
			s, err := usage.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), usage.FileName))
			require.NoError(t, err)
			t.Cleanup(func() { s.Close() })
			return s
		},
		"postgres": func(t *testing.T) usage.Store {
			if pg == nil {
				pg = pgtest.New(t)
			}
			n++ // a database per subtest
			db := "t" + time.Now().Format("150405") + string(rune('a'+n))
			createDB(t, pg.DSN(), db)
			s, err := usage.OpenPostgres(context.Background(), dsnFor(pg.DSN(), db))
			require.NoError(t, err)
			t.Cleanup(func() { s.Close() })
			return s
		},
	}
}

func cost(v float64) *float64 { return &v }

var t0 = time.Date(2026, 12, 1, 10, 15, 0, 0, time.UTC)

func sample() []usage.Record {
	rec := func(min int, key, model, provider string, status int, code string, c *float64, latency, ttft time.Duration, tk usage.Tokens) usage.Record {
		return usage.Record{Time: t0.Add(time.Duration(min) * time.Minute), RequestID: "r" + time.Duration(min).String(),
			Surface: usage.SurfaceREST, Endpoint: usage.EndpointChat, KeyID: key, Model: model, Provider: provider,
			TargetModel: model, Attempts: []usage.Attempt{{Target: provider + "/" + model, Outcome: "ok", Status: 200, Latency: latency}},
			Tokens: tk, CostUSD: c, Latency: latency, TTFT: ttft, Status: status, ErrorCode: code}
	}
	return []usage.Record{
		rec(0, "master:aa", "gpt-4o-mini", "openai", 200, "", cost(0.001), 100*time.Millisecond, 0, usage.Tokens{Prompt: 100, Completion: 10, Cached: 20}),
		rec(1, "master:aa", "gpt-4o-mini", "openai", 200, "", cost(0.002), 200*time.Millisecond, 50*time.Millisecond, usage.Tokens{Prompt: 200, Completion: 20}),
		rec(2, "master:aa", "gpt-4o-mini", "openai", 502, "upstream_error", nil, 300*time.Millisecond, 0, usage.Tokens{}),
		rec(50, "vk_b", "claude", "anthropic", 200, "", cost(0.01), 400*time.Millisecond, 0, usage.Tokens{Prompt: 50, Completion: 500, Reasoning: 300}),
		rec(110, "vk_b", "local", "ollama", 200, "", nil, 500*time.Millisecond, 0, usage.Tokens{Prompt: 5, Completion: 5, Estimated: true}),
	}
}

// TestStores runs one suite on every store kind: writes, grouped queries with
// filters and buckets, paged listing, spend per key, reopening (migrations are
// applied once).
func TestStores(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			ctx := context.Background()
			require.NoError(t, s.Write(ctx, sample()))

			t.Run("spend by key and model", func(t *testing.T) {
				gs, err := s.Query(ctx, usage.Query{Filter: usage.Filter{From: t0.Add(-time.Hour), To: t0.Add(24 * time.Hour)},
					GroupBy: []string{usage.ByKey, usage.ByModel}})
				require.NoError(t, err)
				require.Len(t, gs, 3)
				var g usage.Group
				for _, x := range gs {
					if x.Key[usage.ByKey] == "master:aa" {
						g = x
					}
				}
				require.Equal(t, map[string]string{"key": "master:aa", "model": "gpt-4o-mini"}, g.Key)
				require.EqualValues(t, 3, g.Requests)
				require.EqualValues(t, 1, g.Errors)
				require.EqualValues(t, 1, g.Unpriced)
				require.InDelta(t, 0.003, g.CostUSD, 1e-12)
				require.EqualValues(t, 300, g.Tokens.Prompt)
				require.EqualValues(t, 20, g.Tokens.Cached)
				require.Equal(t, 200*time.Millisecond, g.LatencyP50)
				require.Equal(t, 300*time.Millisecond, g.LatencyP95)
				require.Equal(t, 50*time.Millisecond, g.TTFTP50)
			})
			t.Run("a range past the query's bound", func(t *testing.T) {
				all := usage.Filter{From: t0.Add(-time.Hour), To: t0.Add(24 * time.Hour)}
				_, err := s.Query(ctx, usage.Query{Filter: all, MaxRows: 2})
				require.ErrorIs(t, err, usage.ErrBadQuery)
				require.ErrorContains(t, err, "narrow it")
				gs, err := s.Query(ctx, usage.Query{Filter: all, MaxRows: len(sample())})
				require.NoError(t, err, "exactly the bound is read")
				require.Len(t, gs, 1)
			})
			t.Run("by hour with a filter", func(t *testing.T) {
				gs, err := s.Query(ctx, usage.Query{Filter: usage.Filter{From: t0.Add(-time.Hour), To: t0.Add(24 * time.Hour), KeyID: "vk_b"},
					Bucket: usage.BucketHour})
				require.NoError(t, err)
				require.Len(t, gs, 2)
				require.Equal(t, time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC), gs[0].Start)
				require.EqualValues(t, 1, gs[0].Requests)
				require.True(t, gs[1].Tokens.Estimated)
				require.Equal(t, time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), gs[1].Start)
			})
			t.Run("by day, provider and status filters", func(t *testing.T) {
				gs, err := s.Query(ctx, usage.Query{Filter: usage.Filter{From: t0.Add(-time.Hour), To: t0.Add(time.Hour), Provider: "openai", Status: 502},
					Bucket: usage.BucketDay, GroupBy: []string{usage.ByStatus}})
				require.NoError(t, err)
				require.Len(t, gs, 1)
				require.Equal(t, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), gs[0].Start)
				require.Equal(t, "502", gs[0].Key["status"])
				require.EqualValues(t, 1, gs[0].Requests)
			})
			t.Run("bad group", func(t *testing.T) {
				_, err := s.Query(ctx, usage.Query{GroupBy: []string{"prompt"}})
				require.ErrorIs(t, err, usage.ErrBadQuery)
			})
			t.Run("list pages newest first", func(t *testing.T) {
				var got []usage.Record
				tok := ""
				for range 10 {
					p, err := s.List(ctx, usage.ListFilter{PageSize: 2, PageToken: tok})
					require.NoError(t, err)
					got = append(got, p.Records...)
					if tok = p.NextPageToken; tok == "" {
						break
					}
				}
				require.Len(t, got, 5)
				want := sample()
				for i, r := range got {
					w := want[len(want)-1-i]
					require.Equal(t, w.RequestID, r.RequestID)
					require.True(t, w.Time.Equal(r.Time))
					require.Equal(t, w.Tokens, r.Tokens)
					require.Equal(t, w.CostUSD, r.CostUSD)
					require.Equal(t, w.Latency, r.Latency)
					require.Equal(t, w.TTFT, r.TTFT)
					require.Len(t, r.Attempts, 1)
					require.Equal(t, w.Attempts[0].Target, r.Attempts[0].Target)
					require.Equal(t, w.Attempts[0].Latency, r.Attempts[0].Latency)
				}
				errs, err := s.List(ctx, usage.ListFilter{Filter: usage.Filter{ErrorsOnly: true}})
				require.NoError(t, err)
				require.Len(t, errs.Records, 1)
				require.Equal(t, "upstream_error", errs.Records[0].ErrorCode)
				_, err = s.List(ctx, usage.ListFilter{PageToken: "garbage"})
				require.ErrorIs(t, err, usage.ErrBadQuery)
			})
			t.Run("spend since", func(t *testing.T) {
				sp, err := s.SpendSince(ctx, t0.Add(30*time.Minute))
				require.NoError(t, err)
				require.Len(t, sp, 1)
				require.InDelta(t, 0.01, sp["vk_b"], 1e-12)
			})
			t.Run("a refusal before any upstream is not unpriced", func(t *testing.T) { // last: it adds records
				day := t0.AddDate(0, 1, 0)
				refused := usage.Record{Time: day, RequestID: "refused", Surface: usage.SurfaceREST, Endpoint: usage.EndpointChat,
					KeyID: "vk_c", Model: "gpt-4o-mini", Latency: time.Millisecond, Status: 429, ErrorCode: "insufficient_quota"}
				unpriced := refused
				unpriced.RequestID, unpriced.Provider, unpriced.TargetModel, unpriced.Status, unpriced.ErrorCode = "unpriced", "ollama", "local", 200, ""
				unpriced.Tokens = usage.Tokens{Prompt: 3, Completion: 4}
				require.NoError(t, s.Write(ctx, []usage.Record{refused, unpriced}))
				gs, err := s.Query(ctx, usage.Query{Filter: usage.Filter{From: day, To: day.Add(time.Hour)}, GroupBy: []string{usage.ByKey}})
				require.NoError(t, err)
				require.Len(t, gs, 1)
				require.EqualValues(t, 2, gs[0].Requests)
				require.EqualValues(t, 1, gs[0].Errors)
				require.EqualValues(t, 1, gs[0].Unpriced, "only the request an upstream answered without a price")
			})
			t.Run("prune deletes the oldest records before a time, a batch at a time", func(t *testing.T) { // last: it deletes
				before := t0.Add(time.Hour) // four of the sample's five records
				for _, want := range []int64{2, 2, 0} {
					n, err := s.Prune(ctx, before, 2)
					require.NoError(t, err)
					require.Equal(t, want, n)
				}
				p, err := s.List(ctx, usage.ListFilter{PageSize: 100})
				require.NoError(t, err)
				for _, r := range p.Records {
					require.False(t, r.Time.Before(before), "left a record from before the retention: %v", r.Time)
				}
				require.Len(t, p.Records, 3, "the sample's last record and the two of the month after")
			})
		})
	}
}
