package e2e

import (
	"context"
	"encoding/json"
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
	"github.com/switchyard/switchyard/internal/redistest"
)

// BenchmarkLimitCheck is what a key's limit check adds to a whole REST request
// (fake upstream on loopback): no limit (the master key), the embedded limiter,
// and Redis on loopback (one EVALSHA to admit, one to release). Compare ns/op with
// "no limits" for the ratio (README: Shared state).
//
//	go test ./e2e -run '^$' -bench BenchmarkLimitCheck -benchtime 3000x
func BenchmarkLimitCheck(b *testing.B) {
	redis := redistest.New(b)
	for _, bc := range []struct {
		name, yaml string
		limited    bool
	}{
		{"no limits", "", false},
		{"embedded", "", true},
		{"redis loopback", "state:\n  redis:\n    url: " + redis.URL() + "\n", true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			g := startBench(b, bc.yaml)
			key := "sk-master"
			if bc.limited {
				_, key = createKeyB(b, g, `{"name":"bench","models":["*"],"limits":{"rpm":100000000,"tpm":1000000000,"max_concurrency":1000}}`)
			}
			b.ResetTimer()
			for range b.N {
				if code, _ := chatStatusB(b, g, key); code != http.StatusOK {
					b.Fatalf("status %d", code)
				}
			}
		})
	}
}

// startBench is start for benchmarks (logs discarded): provider "up", keys
// sk-master/sk-admin, extra YAML after the providers.
func startBench(b *testing.B, extra string) *gateway {
	b.Helper()
	up := fakeupstream.New()
	b.Cleanup(up.Close)
	dir := b.TempDir()
	text := "server:\n  http_addr: 127.0.0.1:0\n  grpc_addr: 127.0.0.1:0\n  data_dir: " + dir + "\n" + keysYAML +
		"providers:\n  up:\n    type: openai\n    base_url: " + up.URL + "\n" + extra
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

func createKeyB(b *testing.B, g *gateway, body string) (id, secret string) {
	b.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+g.app.HTTPAddr()+"/admin/v1/keys", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer sk-admin")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Key    struct{ ID string }
		Secret string
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Secret == "" {
		b.Fatalf("create key: %d %v", resp.StatusCode, err)
	}
	return out.Key.ID, out.Secret
}

func chatStatusB(b *testing.B, g *gateway, key string) (int, http.Header) {
	body := `{"model":"up/gpt-4o","messages":[{"role":"user","content":"hi"}]}`
	req, _ := http.NewRequest(http.MethodPost, g.base+"/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header
}
