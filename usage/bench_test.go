package usage_test

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchyard/switchyard/internal/reqid"
	"github.com/switchyard/switchyard/internal/testutil"
	"github.com/switchyard/switchyard/usage"
)

// BenchmarkSQLiteWrite is the store's cost per record in batches of 500, each
// record with a request id of its own:
//   - time-ordered: ids as Switchyard makes them (the time in milliseconds,
//     then random bytes), so that their index grows at its end;
//   - random: ids that callers sent in x-request-id, in no order, which write
//     all over the index once it outgrows SQLite's page cache.
func BenchmarkSQLiteWrite(b *testing.B) {
	cases := []struct {
		name string
		id   func(t time.Time) string
	}{
		{"time-ordered", reqid.New},
		{"random", func(time.Time) string {
			var id [12]byte
			binary.BigEndian.PutUint64(id[:8], rand.Uint64())
			binary.BigEndian.PutUint32(id[8:], rand.Uint32())
			return hex.EncodeToString(id[:])
		}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			s, err := usage.OpenSQLite(context.Background(), filepath.Join(b.TempDir(), usage.FileName))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			c := 0.000025
			rec := usage.Record{Time: time.Now(), Surface: "rest", Endpoint: "chat",
				KeyID: "master:abcd1234", Model: "up/gpt-4o", Provider: "up", TargetModel: "gpt-4o",
				Attempts: []usage.Attempt{{Target: "up/gpt-4o", Outcome: "ok", Status: 200, Latency: time.Millisecond}},
				Tokens:   usage.Tokens{Prompt: 17, Completion: 4}, CostUSD: &c, Latency: 2 * time.Millisecond, Status: 200}
			batch := make([]usage.Record, 500)
			for i := range batch {
				batch[i] = rec
			}
			next := func() { // the batch's records arrive 100 µs apart
				for j := range batch {
					rec.Time = rec.Time.Add(100 * time.Microsecond)
					batch[j].Time, batch[j].RequestID = rec.Time, tc.id(rec.Time)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			var cpu time.Duration
			for i := 0; i < b.N; i += len(batch) {
				b.StopTimer()
				next()
				b.StartTimer()
				start := testutil.CPUTime()
				if err := s.Write(context.Background(), batch); err != nil {
					b.Fatal(err)
				}
				cpu += testutil.CPUTime() - start
			}
			// The process's CPU time per record: less swayed than wall time by what
			// else the machine runs.
			b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}
