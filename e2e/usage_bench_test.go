package e2e

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
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
					req, _ := http.NewRequest(http.MethodPost, g.base+"/chat/completions", strings.NewReader(chatBody+"}"))
					req.Header.Set("Authorization", "Bearer sk-master")
					req.Header.Set("Content-Type", "application/json")
					resp, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
				}
			})
		})
	}
}
