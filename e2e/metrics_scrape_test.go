package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/fakeupstream"
)

// TestMetricsScrapeWithManyModelBreakers: model-scoped breakers for more models
// than the label bound (every unlisted model is "other") still scrape with 200,
// one breaker_state series per provider and label, showing the worst state.
func TestMetricsScrapeWithManyModelBreakers(t *testing.T) {
	t.Parallel()
	g := start(t, "", withYAML("resilience:\n  retry:\n    max_retries: 0\n  circuit_breaker:\n    scope: model\n    failure_threshold: 1\n    timeout: 1h\n"))
	const models = 40
	for i := range models {
		if i == models-1 {
			g.up.Script(fakeupstream.Reply{Status: 503}) // the last one opens its breaker
		}
		body := strings.Replace(chatBody, "up/gpt-4o", fmt.Sprintf("up/made-up-%d", i), 1) + `}`
		resp := post(t, g.base+"/chat/completions", body)
		_, _ = io.Copy(io.Discard, resp.Body)
	}
	require.Equal(t, 200, post(t, g.base+"/chat/completions", chatBody+`}`).StatusCode)

	resp, err := http.Get("http://" + g.app.HTTPAddr() + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	after := scrape(t, g)
	require.Equal(t, 2.0, after[key("switchyard_breaker_state", "provider", "up", "model", "other")], "the worst of the unlisted models' breakers: open")
	require.Equal(t, 0.0, after[key("switchyard_breaker_state", "provider", "up", "model", "gpt-4o")])
	require.Equal(t, 1.0, after[key("switchyard_breaker_transitions_total", "provider", "up", "model", "other", "from", "closed", "to", "open")])
	require.Equal(t, float64(models-1), after[key("switchyard_upstream_attempts_total", "provider", "up", "model", "other", "outcome", "success")])
	require.NotContains(t, string(raw), "made-up-")
	require.Contains(t, string(raw), "switchyard_requests_total", "the other families are served too")
}
