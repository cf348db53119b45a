package e2e

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/fakeupstream"
)

// TestMessagesNodeSDK runs e2e/node_anthropic with node's test runner against a
// started Switchyard. Providers, all on OpenAI's wire: "up" answers normally,
// "cut" cuts every stream after three events, "tools" answers every chat with a
// get_weather call, "think" with reasoning_content and text; "anth" is a fake
// Anthropic API and "busy" one that answers 529 overloaded_error.
func TestMessagesNodeSDK(t *testing.T) {
	t.Parallel()
	_, err := os.Stat("../node_modules/@anthropic-ai/sdk/package.json")
	require.NoError(t, err, "the Node Anthropic SDK is missing: run the tests through `make test` (it runs npm ci)")
	fake := func(r fakeupstream.Reply) *fakeupstream.Server {
		s := fakeupstream.New()
		t.Cleanup(s.Close)
		s.SetDefault(r)
		return s
	}
	cut := fake(fakeupstream.Reply{CutAfter: 3})
	tools := fake(fakeupstream.Reply{Body: `{"id":"chatcmpl-t1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,` +
		`"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},` +
		`"finish_reason":"tool_calls"}]}`})
	think := fake(fakeupstream.Reply{Body: `{"id":"chatcmpl-r1","object":"chat.completion","created":1,"model":"o3","choices":[{"index":0,` +
		`"message":{"role":"assistant","content":"x = 7","reasoning_content":"12 - 5 is 7."},"finish_reason":"stop"}]}`})
	var yaml strings.Builder
	for name, s := range map[string]*fakeupstream.Server{"cut": cut, "tools": tools, "think": think} {
		yaml.WriteString("  " + name + ":\n    type: openai\n    base_url: " + s.URL + "\n")
	}
	// "anth" and "busy" speak Anthropic's wire, busy always overloaded (529); the
	// virtual model claude-first fails over from busy to up/gpt-4o.
	anth, busy := fakeupstream.NewAnthropic(), fakeupstream.NewAnthropic()
	t.Cleanup(anth.Close)
	t.Cleanup(busy.Close)
	busy.SetDefault(fakeupstream.Reply{Status: 529})
	for name, a := range map[string]*fakeupstream.Anthropic{"anth": anth, "busy": busy} {
		yaml.WriteString("  " + name + ":\n    type: anthropic\n    base_url: " + a.URL + "\n    api_key: sk-ant\n" +
			"    models: [claude-sonnet-4-20250514]\n")
	}
	yaml.WriteString("virtual_models:\n  - source: claude-first\n    strategy: failover\n    targets:\n" +
		"      - model: busy/claude-sonnet-4-20250514\n      - model: up/gpt-4o\n")
	g := start(t, "  master_key: sk-node\n", withYAML(yaml.String()))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "--test", "--test-reporter=spec", "node_anthropic/")
	cmd.Env = append(os.Environ(), "SWITCHYARD_ROOT="+strings.TrimSuffix(g.base, "/v1"), "SWITCHYARD_KEY=sk-node")
	out, err := cmd.CombinedOutput()
	t.Logf("node --test:\n%s", out)
	require.NoError(t, err, "the Node Anthropic SDK suite failed")
	require.Equal(t, 1, cut.Count(), "the cut stream was not retried after its first event")
	last := tools.Requests()[tools.Count()-1].JSON()
	msgs := last["messages"].([]any)
	require.Equal(t, "tool", msgs[len(msgs)-1].(map[string]any)["role"], "the tool result reached the upstream as a tool message")
	require.Equal(t, "low", think.Requests()[0].JSON()["reasoning_effort"])
	require.Contains(t, string(anth.Requests()[0].Body), `"cache_control":{"type":"ephemeral"}`)
	require.NotZero(t, busy.Count(), "claude-first tried its Claude target first")
}
