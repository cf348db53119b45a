package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/app"
	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/internal/fakeupstream"
	"github.com/switchyard/switchyard/internal/pgtest"
	"github.com/switchyard/switchyard/internal/testutil"
)

// benchGateway is start for benchmarks: provider "up" on a fake upstream, keys
// sk-master/sk-admin, extra YAML after the providers, logs discarded.
func benchGateway(b *testing.B, extra string) *gateway {
	b.Helper()
	up := fakeupstream.New()
	b.Cleanup(up.Close)
	dir := b.TempDir()
	text := "server:\n  http_addr: 127.0.0.1:0\n  grpc_addr: 127.0.0.1:0\n  data_dir: " + dir + "\n" + keysYAML +
		"providers:\n  up:\n    type: openai\n    base_url: " + up.URL + "\n    api_key: sk-upstream\n" + extra
	path := filepath.Join(dir, "switchyard.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		b.Fatal(err)
	}
	cfg, err := config.Load(path, func(string) (string, bool) { return "", false })
	if err != nil {
		b.Fatal(err)
	}
	a, err := app.Start(context.Background(), cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Shutdown(ctx)
	})
	return &gateway{app: a, up: up, base: "http://" + a.HTTPAddr() + "/v1"}
}

// BenchmarkUsageLedger is the ledger's cost per request: REST chat calls at
// c=32 (16 goroutines per CPU on this 2-CPU machine) through a gateway with the
// ledger off (usage.store: none) and on (SQLite, the default; Postgres when its
// binaries are installed), fake upstream in process. The gateway is CPU-bound
// here: ns/op is wall time per request with every core busy, cpu-ns/op this
// process's CPU per request (Postgres's own work is in its server processes: it
// shows in ns/op, not in cpu-ns/op). Compare each with "off" (the target is at
// most 5 % more).
//
//	go test ./e2e -run '^$' -bench BenchmarkUsageLedger -benchtime 20000x -count 5
func BenchmarkUsageLedger(b *testing.B) {
	cases := []struct{ name, yaml string }{
		{"off", "usage:\n  store: none\n"},
		{"sqlite", usageYAML},
	}
	if _, err := pgtest.Bin(); err == nil { // Postgres's own CPU is another process's: compare ns/op too
		pg := pgtest.New(b)
		cases = append(cases, struct{ name, yaml string }{"postgres", usageYAML + "usage:\n  store: postgres\n  dsn: " + pg.DSN() + "\n"})
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			g := benchGateway(b, c.yaml)
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			b.ReportAllocs()
			b.SetParallelism(16)
			b.ResetTimer()
			cpu := testutil.CPUTime()
			defer func() { b.ReportMetric(float64(testutil.CPUTime()-cpu)/float64(b.N), "cpu-ns/op") }()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := benchChat(client, g); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// benchChat is one REST chat call of the ledger's benchmarks.
func benchChat(client *http.Client, g *gateway) error {
	req, _ := http.NewRequest(http.MethodPost, g.base+"/chat/completions", strings.NewReader(chatBody+"}"))
	req.Header.Set("Authorization", "Bearer sk-master")
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// BenchmarkUsageLedgerRatio makes BenchmarkUsageLedger's comparison within one
// run, where the machine's drift falls on both sides alike: a gateway with the
// ledger off and one with it on (SQLite) serve alternating phases of the same
// REST load at c=32, the order swapped each round, each phase ending with the
// same idle wait, in which the ledger's writer (flushing every 20 ms) stores the
// phase's records. It reports "on" over "off" in percent: ledger-cpu-% (this
// process's CPU per request) and ledger-allocs-% (allocations per request).
// The in-process client and fake upstream cost both sides the same, so the
// gateway's own share is larger (the README gives it from a CPU profile).
//
//	go test ./e2e -run '^$' -bench BenchmarkUsageLedgerRatio -benchtime 40000x
func BenchmarkUsageLedgerRatio(b *testing.B) {
	const phase, clients = 2000, 32
	sides := []*gateway{benchGateway(b, "usage:\n  store: none\n"), benchGateway(b, usageYAML+"usage:\n  flush_interval: 20ms\n")}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var cpu [2]time.Duration
	var allocs [2]uint64
	var ms runtime.MemStats
	run := func(g *gateway, n int) {
		var left atomic.Int64
		left.Store(int64(n))
		var wg sync.WaitGroup
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for left.Add(-1) >= 0 {
					if err := benchChat(client, g); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		time.Sleep(100 * time.Millisecond) // five flush intervals: the writer stores the phase's records
	}
	b.ReportAllocs()
	b.ResetTimer()
	for round, done := 0, 0; done < b.N; round, done = round+1, done+phase {
		n := min(phase, b.N-done)
		for k := range 2 {
			side := (round + k) % 2
			runtime.ReadMemStats(&ms)
			c0, a0 := testutil.CPUTime(), ms.Mallocs
			run(sides[side], n)
			runtime.ReadMemStats(&ms)
			cpu[side] += testutil.CPUTime() - c0
			allocs[side] += ms.Mallocs - a0
		}
	}
	b.ReportMetric(100*(float64(cpu[1])/float64(cpu[0])-1), "ledger-cpu-%")
	b.ReportMetric(100*(float64(allocs[1])/float64(allocs[0])-1), "ledger-allocs-%")
}
