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
