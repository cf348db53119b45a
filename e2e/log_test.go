package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/fakeupstream"
)

type logRecord map[string]any

// logsSince decodes the JSON lines written after offset.
func logsSince(t *testing.T, g *gateway, offset int) []logRecord {
	t.Helper()
	var out []logRecord
	for _, line := range strings.Split(strings.TrimSpace(g.logs.String()[offset:]), "\n") {
		if line == "" {
			continue
		}
		var rec logRecord
		require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
		out = append(out, rec)
	}
	return out
}

// TestLogOneLinePerFailover: through a failing primary, each request writes one
// info line (the request line, with its attempts and failovers) and nothing per
// attempt or per failover; the breaker's opening is one warn line, once. It also
// measures the bytes logged per request (README "Log volume").
func TestLogOneLinePerFailover(t *testing.T) {
	t.Parallel()
	backup := fakeupstream.New("gpt-4o-mini")
	t.Cleanup(backup.Close)
	g := start(t, "", withYAML("  backup:\n    type: openai\n    base_url: "+backup.URL+"\n"+
		"resilience:\n  retry:\n    max_retries: 1\n    initial_backoff: 1ms\n  circuit_breaker:\n    failure_threshold: 3\n    timeout: 1h\n"+
		"virtual_models:\n  - source: chain\n    targets:\n      - model: up/gpt-4o\n      - model: backup/gpt-4o-mini\n"))
	g.up.SetDefault(fakeupstream.Reply{Status: 503})
	chain := strings.Replace(chatBody, "up/gpt-4o", "chain", 1) + `}`

	// The first request: two attempts on the primary, one failover, one answer.
	offset := len(g.logs.String())
	resp := post(t, g.base+"/chat/completions", chain, "X-Request-Id", "fo-1")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	recs := logsSince(t, g, offset)
	require.Len(t, recs, 1, "one line for the request: %v", recs)
	line := recs[0]
	require.Equal(t, "INFO", line["level"])
	require.Equal(t, "request", line["msg"])
	require.Equal(t, "fo-1", line["request_id"])
	require.Equal(t, float64(3), line["attempts"], "two on the primary, one on the backup")
	require.Equal(t, float64(1), line["failovers"])
	require.Equal(t, "backup/gpt-4o-mini", line["target"])

	// A soak: the breaker opens once (one warn line), every request is one line.
	const n = 200
	offset = len(g.logs.String())
	for i := range n {
		resp := post(t, g.base+"/chat/completions", chain, "X-Request-Id", fmt.Sprintf("soak-%03d", i))
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	written := len(g.logs.String()) - offset
	recs = logsSince(t, g, offset)
	levels := map[string]int{}
	var opened int
	for _, rec := range recs {
		levels[rec["level"].(string)]++
		if rec["msg"] == "circuit breaker opened" {
			opened++
			require.Equal(t, "up", rec["provider"])
		}
	}
	require.Equal(t, 1, opened, "the breaker's opening is logged once, not per request")
	require.Equal(t, map[string]int{"INFO": n, "WARN": 1}, levels, "one info line per request, plus the breaker opening")
	perRequest := float64(written) / n
	t.Logf("failing primary, %d requests: %d bytes of logs, %.0f bytes per request", n, written, perRequest)
	require.Less(t, perRequest, 400.0, "bytes per failed-over request (README: Log volume)")

	// A plain success: one line too.
	offset = len(g.logs.String())
	resp = post(t, g.base+"/chat/completions", strings.Replace(chatBody, "up/gpt-4o", "backup/gpt-4o-mini", 1)+`}`, "X-Request-Id", "ok-1")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	ok := g.logs.String()[offset:]
	require.Len(t, logsSince(t, g, offset), 1)
	t.Logf("plain success: %d bytes", len(ok))
}

// TestACallRefusedForItsBodyIsObserved: a call the REST front refuses before the
// chain — its body too large, not JSON, nested too deep — has its request line
// (its request id, its status, its key) and counts in switchyard_requests_total,
// as every other end does. Before, such refusals left neither.
func TestACallRefusedForItsBodyIsObserved(t *testing.T) {
	t.Parallel()
	g := start(t, keysYAML+"  max_body_bytes: 65536\n")
	root := strings.TrimSuffix(g.base, "/v1")
	big := `{"model":"up/gpt-4o","pad":"` + strings.Repeat("x", 70_000) + `"}`
	deep := `{"model":"up/gpt-4o","messages":[{"role":"user","content":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}]}`
	for _, tc := range []struct {
		name, path, body string
		status           int
		endpoint         string
	}{
		{"chat, not JSON", "/v1/chat/completions", `{"model":`, http.StatusBadRequest, "CreateChatCompletion"},
		{"chat, nested too deep", "/v1/chat/completions", deep, http.StatusBadRequest, "CreateChatCompletion"},
		{"chat, too large", "/v1/chat/completions", big, http.StatusRequestEntityTooLarge, "CreateChatCompletion"},
		{"embeddings, not JSON", "/v1/embeddings", `{"input":`, http.StatusBadRequest, "CreateEmbeddings"},
		{"messages, too large", "/v1/messages", big, http.StatusRequestEntityTooLarge, "CreateMessage"},
		{"passthrough, too large", "/p/up/files", big, http.StatusRequestEntityTooLarge, "Forward"},
		{"admin, too large", "/admin/v1/keys", big, http.StatusRequestEntityTooLarge, "CreateKey"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "refused-" + strings.ReplaceAll(tc.name, " ", "-")
			key := "sk-master"
			if strings.HasPrefix(tc.path, "/admin/") {
				key = "sk-admin"
			}
			before := scrape(t, g)
			resp := post(t, root+tc.path, tc.body, "Authorization", "Bearer "+key, "X-Request-Id", id)
			require.Equal(t, tc.status, resp.StatusCode)
			require.Equal(t, id, resp.Header.Get("X-Request-Id"))
			var line logRecord
			for _, rec := range logsSince(t, g, 0) {
				if rec["msg"] == "request" && rec["request_id"] == id {
					line = rec
				}
			}
			require.NotNil(t, line, "the refusal has its request line")
			require.EqualValues(t, tc.status, line["status"], "%v", line)
			after := scrape(t, g)
			moved := 0.0
			for series, v := range after {
				if strings.HasPrefix(series, "switchyard_requests_total{") && strings.Contains(series, `endpoint="`+tc.endpoint+`"`) {
					moved += v - before[series]
				}
			}
			require.Equal(t, 1.0, moved, "switchyard_requests_total counts it")
		})
	}
}
