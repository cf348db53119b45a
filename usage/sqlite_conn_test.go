package usage

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// openTestSQLite opens a SQLite store in a temp dir; driver makes its writes
// go through database/sql's driver instead of the liteConn.
func openTestSQLite(t *testing.T, driver bool) *sqlStore {
	t.Helper()
	st, err := OpenSQLite(context.Background(), filepath.Join(t.TempDir(), FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s := st.(*sqlStore)
	if driver {
		s.liteName = ""
	}
	return s
}

// oddRecords are records with every kind of value a column takes: NULL cost
// and TTFT, empty and non-ASCII texts, extreme numbers, attempts of each form.
func oddRecords(n int) []Record {
	rnd := rand.New(rand.NewPCG(7, 11))
	texts := []string{"", "a", "é/模型", "we\"ird'\x00nul", strings.Repeat("x", 3000), "gpt-4o"}
	pick := func() string { return texts[rnd.IntN(len(texts))] }
	out := make([]Record, n)
	for i := range out {
		var cost *float64
		if i%3 != 0 {
			c := []float64{0, 1e-12, 0.25, math.MaxFloat64, -0.0}[rnd.IntN(5)]
			cost = &c
		}
		as := []Attempt{{Target: pick(), Outcome: "ok", Status: 200, Latency: time.Duration(rnd.Int64N(1e10))}}
		if i%4 == 1 {
			as = append(as, Attempt{Target: "b/c", Outcome: "stream_cut", Tokens: &Tokens{Prompt: 3}, CostUSD: cost})
		}
		if i%7 == 0 {
			as = nil
		}
		out[i] = Record{Time: time.UnixMicro(rnd.Int64N(math.MaxInt64 / 2)), RequestID: fmt.Sprintf("req-%d", i),
			Surface: pick(), Endpoint: pick(), Stream: i%2 == 0, KeyID: pick(), Model: pick(), VirtualModel: pick(),
			Provider: pick(), TargetModel: pick(), Attempts: as, Failovers: rnd.IntN(3), Resumes: rnd.IntN(2), Hedged: i%5 == 0,
			Tokens: Tokens{Prompt: rnd.Int64N(math.MaxInt64), Completion: rnd.Int64N(1 << 20), Cached: int64(i),
				CacheWrite: 1, Reasoning: -1, Estimated: i%3 == 0},
			CostUSD: cost, Latency: time.Duration(rnd.Int64N(1e12)), TTFT: time.Duration(i%3) * time.Millisecond,
			Status: []int{200, 429, 502}[i%3], ErrorCode: pick()}
	}
	return out
}

// storedRows is every stored column of every row, each with SQLite's type of it.
func storedRows(t *testing.T, s *sqlStore) [][]any {
	t.Helper()
	cols := strings.Split(strings.Join(strings.Fields(columns), ""), ",")
	sel := make([]string, 0, 2*len(cols))
	for _, c := range cols {
		sel = append(sel, "typeof("+c+")", c)
	}
	rows, err := s.db.Query("SELECT " + strings.Join(sel, ", ") + " FROM usage_requests ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		vals := make([]any, len(sel))
		ptrs := make([]any, len(sel))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// The liteConn stores, value for value and type for type, what the driver's
// prepared statements store, for batches of every size around a statement's.
func TestLiteConnStoresWhatTheDriverStores(t *testing.T) {
	for _, n := range []int{1, rowsPerInsert - 1, rowsPerInsert, rowsPerInsert + 1, 3*rowsPerInsert + 7} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			recs := oddRecords(n)
			lite, drv := openTestSQLite(t, false), openTestSQLite(t, true)
			for _, s := range []*sqlStore{lite, drv} {
				if err := s.Write(context.Background(), recs); err != nil {
					t.Fatal(err)
				}
				if err := s.Write(context.Background(), recs[:1]); err != nil { // a second batch, on the same connection
					t.Fatal(err)
				}
			}
			if lite.lconn == nil || drv.lconn != nil {
				t.Fatal("the stores did not write the ways they were meant to")
			}
			got, want := storedRows(t, lite), storedRows(t, drv)
			if len(got) != n+1 {
				t.Fatalf("%d rows stored, want %d", len(got), n+1)
			}
			for i := range want {
				for j := range want[i] {
					if !reflect.DeepEqual(got[i][j], want[i][j]) {
						t.Fatalf("row %d, %s of %s: lite %.80q, driver %.80q", i, []string{"type", "value"}[j%2],
							strings.Fields(strings.ReplaceAll(columns, ",", " "))[j/2], fmt.Sprint(got[i][j]), fmt.Sprint(want[i][j]))
					}
				}
			}
		})
	}
}

// A batch that fails part way keeps none of its rows, and the next batch is
// written on a fresh connection.
func TestLiteConnBatchIsAllOrNothing(t *testing.T) {
	cases := []struct {
		name  string
		write func(s *sqlStore, recs []Record) error
	}{
		{"a statement fails after others ran", func(s *sqlStore, recs []Record) error {
			c, err := openLiteConn(context.Background(), s.liteName)
			if err != nil {
				return err
			}
			defer c.close()
			return c.write(context.Background(), recs, func(n int) string {
				if n < rowsPerInsert {
					return "INSERT INTO no_such_table VALUES (1)"
				}
				return s.insertFor(n)
			})
		}},
		{"the context is done", func(s *sqlStore, recs []Record) error {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return s.Write(ctx, recs)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := openTestSQLite(t, false)
			recs := oddRecords(2*rowsPerInsert + 5)
			if err := tc.write(s, recs); err == nil {
				t.Fatal("the write did not fail")
			}
			if rows := storedRows(t, s); len(rows) != 0 {
				t.Fatalf("%d rows of a failed batch were kept", len(rows))
			}
			if err := s.Write(context.Background(), recs[:3]); err != nil {
				t.Fatal(err)
			}
			if rows := storedRows(t, s); len(rows) != 3 {
				t.Fatalf("%d rows after the next batch, want 3", len(rows))
			}
		})
	}
}

// A file another connection holds locked is waited for only while the write's
// context lasts (Close's deadline ends a stalled write); once the lock goes,
// the next batch is written.
func TestLiteConnWaitsForALockOnlyWhileTheContextLasts(t *testing.T) {
	s := openTestSQLite(t, false)
	other, err := s.db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := s.Write(ctx, oddRecords(3)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a write into a locked file ended with %v, want the context's deadline", err)
	}
	// Without the context the wait would be liteBusyTimeout.
	if waited := time.Since(start); waited >= liteBusyTimeout/2 {
		t.Fatalf("the write waited %v for the lock after its context ended", waited)
	}
	if _, err := other.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(context.Background(), oddRecords(3)); err != nil {
		t.Fatal(err)
	}
	if rows := storedRows(t, s); len(rows) != 3 {
		t.Fatalf("%d rows, want 3", len(rows))
	}
}
