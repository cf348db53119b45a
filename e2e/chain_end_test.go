package e2e

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/fakeupstream"
)

// A walked chain whose last target was skipped (its breaker open) still says that
// Switchyard already tried: x-should-retry: false, and no Retry-After of the
// skipped target's breaker.
func TestChainEndingAtAnOpenBreakerIsFinal(t *testing.T) {
	t.Parallel()
	backup := fakeupstream.New("gpt-4o")
	t.Cleanup(backup.Close)
	g := start(t, keysYAML, withYAML("  backup:\n    type: openai\n    base_url: "+backup.URL+"\n"+
		"virtual_models:\n  - source: chat\n    targets: [{model: up/gpt-4o}, {model: backup/gpt-4o}]\n"))
	g.up.SetDefault(fakeupstream.Reply{Status: 500})
	adminCall(t, g, "TripBreaker", `{"provider":"backup","duration":"10m"}`)

	resp := post(t, g.base+"/chat/completions", `{"model":"chat","messages":[{"role":"user","content":"hi"}]}`,
		"Authorization", "Bearer sk-master")
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, "false", resp.Header.Get("X-Should-Retry"))
	require.Empty(t, resp.Header.Get("Retry-After"))
	require.Equal(t, 1, g.up.Count(), "the primary was tried")
	require.Zero(t, backup.Count(), "the open backup was skipped")
}
