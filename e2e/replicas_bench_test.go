package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

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
			g := benchGateway(b, bc.yaml)
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
