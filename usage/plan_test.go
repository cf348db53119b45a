package usage

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/pgtest"
)

// planCases are the statements the store runs, each with the filters a user
// gives: every one must read an index, never scan the table.
func planCases(s *sqlStore) map[string]func() (string, []any) {
	day := Filter{From: time.Now().Add(-24 * time.Hour), To: time.Now()}
	with := func(edit func(*Filter)) Filter { f := day; edit(&f); return f }
	cases := map[string]Filter{
		"a day":                day,
		"a day, one key":       with(func(f *Filter) { f.KeyID = "k" }),
		"a day, one model":     with(func(f *Filter) { f.Model = "m" }),
		"a day, one provider":  with(func(f *Filter) { f.Provider = "p" }),
		"a day, errors only":   with(func(f *Filter) { f.ErrorsOnly = true; f.Status = 500 }),
		"since, no end":        {From: day.From},
		"one request, no time": {RequestID: "r"},
	}
	out := map[string]func() (string, []any){}
	for name, f := range cases {
		out["query: "+name] = func() (string, []any) { return s.querySQL(f) }
		out["list: "+name] = func() (string, []any) {
			q, args, err := s.listSQL(ListFilter{Filter: f}, 50)
			if err != nil {
				panic(err)
			}
			return q, args
		}
	}
	out["list: newest, no filter"] = func() (string, []any) { q, args, _ := s.listSQL(ListFilter{}, 50); return q, args }
	out["spend since"] = func() (string, []any) { return s.d.rebind(spendSQL), []any{day.From.UnixMicro()} }
	out["prune"] = func() (string, []any) { return s.d.rebind(pruneSQL), []any{day.From.UnixMicro(), 1000} }
	return out
}

// TestQueriesUseIndexes: on both stores, every query the admin API and the
// budgets' seed make reads an index (SQLite's EXPLAIN QUERY PLAN; Postgres's
// EXPLAIN with sequential scans priced out, as a big table would).
func TestQueriesUseIndexes(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		st, err := OpenSQLite(context.Background(), filepath.Join(t.TempDir(), FileName))
		require.NoError(t, err)
		defer st.Close()
		s := st.(*sqlStore)
		for name, stmt := range planCases(s) {
			t.Run(name, func(t *testing.T) {
				q, args := stmt()
				plan := explain(t, s, "EXPLAIN QUERY PLAN "+q, args)
				require.Contains(t, plan, "INDEX usage_requests_", "plan: %s", plan)
				for _, line := range strings.Split(plan, "\n") {
					if strings.Contains(line, "SCAN usage_requests") {
						require.Contains(t, line, "USING", "a table scan: %s", plan)
					}
				}
			})
		}
	})
	t.Run("postgres", func(t *testing.T) {
		pg := pgtest.New(t)
		st, err := OpenPostgres(context.Background(), pg.DSN())
		require.NoError(t, err)
		defer st.Close()
		s := st.(*sqlStore)
		s.db.SetMaxOpenConns(1) // the SET below holds for the one connection
		_, err = s.db.Exec("SET enable_seqscan = off")
		require.NoError(t, err)
		for name, stmt := range planCases(s) {
			t.Run(name, func(t *testing.T) {
				q, args := stmt()
				plan := explain(t, s, "EXPLAIN "+q, args)
				require.Contains(t, plan, "usage_requests_", "plan: %s", plan)
				require.NotContains(t, plan, "Seq Scan on usage_requests", "plan: %s", plan)
			})
		}
	})
}

func explain(t *testing.T, s *sqlStore, q string, args []any) string {
	t.Helper()
	rows, err := s.db.Query(q, args...)
	require.NoError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	var b strings.Builder
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rows.Scan(ptrs...))
		for _, v := range vals {
			switch v := v.(type) {
			case string:
				b.WriteString(v + " ")
			case []byte:
				b.WriteString(string(v) + " ")
			}
		}
		b.WriteString("\n")
	}
	require.NoError(t, rows.Err())
	return b.String()
}
