package usage_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchyard/switchyard/internal/testutil"
	"github.com/switchyard/switchyard/usage"
)

// BenchmarkSQLiteWrite is the store's cost per record in batches of 500.
func BenchmarkSQLiteWrite(b *testing.B) {
	s, err := usage.OpenSQLite(context.Background(), filepath.Join(b.TempDir(), usage.FileName))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c := 0.000025
	rec := usage.Record{Time: time.Now(), RequestID: "0123456789abcdef01234567", Surface: "rest", Endpoint: "chat",
		KeyID: "master:abcd1234", Model: "up/gpt-4o", Provider: "up", TargetModel: "gpt-4o",
		Attempts: []usage.Attempt{{Target: "up/gpt-4o", Outcome: "ok", Status: 200, Latency: time.Millisecond}},
		Tokens:   usage.Tokens{Prompt: 17, Completion: 4}, CostUSD: &c, Latency: 2 * time.Millisecond, Status: 200}
	batch := make([]usage.Record, 500)
	for i := range batch {
		batch[i] = rec
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := testutil.CPUTime()
	for i := 0; i < b.N; i += len(batch) {
		if err := s.Write(context.Background(), batch); err != nil {
			b.Fatal(err)
		}
	}
	// The process's CPU time per record: less swayed than wall time by what else
	// the machine runs.
	b.ReportMetric(float64(testutil.CPUTime()-cpu)/float64(b.N), "cpu-ns/op")
}
