package e2e

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/fakeupstream"
)

// TestNodeSDK runs e2e/node with node's test runner against a started Switchyard.
// Providers: "up" answers normally, "cut" cuts every stream after two events,
// "fail" answers every chat with OpenAI's 400 context_length_exceeded.
func TestNodeSDK(t *testing.T) {
	t.Parallel()
	_, err := os.Stat("../node_modules/openai/package.json")
	require.NoError(t, err, "the Node OpenAI SDK is missing: run the tests through `make test` (it runs npm ci)")

	cut := fakeupstream.New()
	t.Cleanup(cut.Close)
	cut.SetDefault(fakeupstream.Reply{CutAfter: 3})
	fail := fakeupstream.New()
	t.Cleanup(fail.Close)
	fail.SetDefault(fakeupstream.Reply{Status: 400, Body: `{"error":{"message":"This model's maximum context length is 128000 tokens.",` +
		`"type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`})
	g := start(t, "  master_key: sk-node\n", withYAML(
		"  cut:\n    type: openai\n    base_url: "+cut.URL+"\n"+
			"  fail:\n    type: openai\n    base_url: "+fail.URL+"\n"))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "--test", "--test-reporter=spec", "node/")
	cmd.Env = append(os.Environ(), "SWITCHYARD_BASE_URL="+g.base, "SWITCHYARD_KEY=sk-node")
	out, err := cmd.CombinedOutput()
	t.Logf("node --test:\n%s", out)
	require.NoError(t, err, "the Node SDK suite failed")
	reqs := g.up.Requests()
	require.Len(t, reqs, 4, "chat, stream helper, raw stream, unknown params: each reached the upstream once")
	require.Equal(t, float64(40), reqs[3].JSON()["top_k"], "top_k reached the upstream")
	require.Equal(t, 1, cut.Count())
}
