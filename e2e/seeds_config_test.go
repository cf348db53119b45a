package e2e

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/app"
	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/internal/fakeupstream"
	"github.com/switchyard/switchyard/internal/testutil"
)

const seedAnthropicKey = "sk-ant-seed-0123456789"

// startSeedConfig runs Switchyard on the seeds' own configuration example
// (config/testdata/seed.yaml, the reference docs' resilience example, unchanged)
// with its environment pointing at fakes: ANTHROPIC_API_KEY is the fake
// Anthropic upstream's key and ANTHROPIC_BASE_URL its URL, OLLAMA_BASE_URL and
// VLLM_BASE_URL fake OpenAI-compatible upstreams. Only the listen addresses and
// data dir are set after loading, as the command-line flags do.
func startSeedConfig(t *testing.T) (*gateway, *fakeupstream.Anthropic, map[string]*fakeupstream.Server) {
	t.Helper()
	ant := fakeupstream.NewAnthropic()
	t.Cleanup(ant.Close)
	ups := map[string]*fakeupstream.Server{"ollama": fakeupstream.New("llama3.2"), "vllm": fakeupstream.New("qwen2.5")}
	for _, up := range ups {
		t.Cleanup(up.Close)
	}
	env := map[string]string{"ANTHROPIC_API_KEY": seedAnthropicKey, "ANTHROPIC_BASE_URL": ant.URL,
		"OLLAMA_BASE_URL": ups["ollama"].URL, "VLLM_BASE_URL": ups["vllm"].URL}
	cfg, err := config.Load("../config/testdata/seed.yaml", func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	require.NoError(t, err)
	require.Empty(t, cfg.Warnings())
	cfg.Server.HTTPAddr, cfg.Server.GRPCAddr, cfg.Server.DataDir = "127.0.0.1:0", "127.0.0.1:0", t.TempDir()

	logs := &testutil.LogBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, err := app.Start(ctx, cfg, slog.New(slog.NewJSONHandler(logs, nil)))
	require.NoError(t, err)
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, a.Shutdown(sctx))
	})
	require.NotContains(t, logs.String(), "not supported yet")
	return &gateway{app: a, base: "http://" + a.HTTPAddr() + "/v1", logs: logs}, ant, ups
}

// TestSeedConfigServesAnthropicWithTheOpenAISDK: the seeds' configuration
// example loads and serves its Anthropic models (and its ollama and vllm ones)
// to the OpenAI Go SDK, non-stream and stream, over Anthropic's wire, with the
// example's per-provider retries (5 for anthropic, over the global 2).
func TestSeedConfigServesAnthropicWithTheOpenAISDK(t *testing.T) {
	t.Parallel()
	g, ant, ups := startSeedConfig(t)
	c := sdk(g, "k")

	page, err := c.Models.List(context.Background())
	require.NoError(t, err)
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	require.Subset(t, ids, []string{"anthropic/claude-sonnet-4-20250514", "ollama/llama3.2", "vllm/qwen2.5"})

	p := userMsg("Say hello")
	p.Model = "anthropic/claude-sonnet-4-20250514"
	resp, err := c.Chat.Completions.New(context.Background(), p)
	require.NoError(t, err)
	require.Equal(t, "Hello from the fake upstream!", resp.Choices[0].Message.Content)
	require.Equal(t, "stop", resp.Choices[0].FinishReason)
	require.Equal(t, "claude-sonnet-4-20250514", resp.Model)
	require.Equal(t, int64(14), resp.Usage.PromptTokens)
	require.Equal(t, int64(5), resp.Usage.CompletionTokens)

	s := c.Chat.Completions.NewStreaming(context.Background(), p)
	var text, finish string
	for s.Next() {
		for _, ch := range s.Current().Choices {
			text += ch.Delta.Content
			if ch.FinishReason != "" {
				finish = ch.FinishReason
			}
		}
	}
	require.NoError(t, s.Err())
	require.Equal(t, "Hello from the fake upstream!", text)
	require.Equal(t, "stop", finish)

	reqs := ant.Requests()
	require.Len(t, reqs, 2)
	for i, r := range reqs {
		require.Equal(t, "/v1/messages", r.Path)
		require.Equal(t, seedAnthropicKey, r.Header.Get("x-api-key"), "ANTHROPIC_API_KEY reached the upstream")
		require.Equal(t, "2023-06-01", r.Header.Get("anthropic-version"))
		require.Empty(t, r.Header.Get("Authorization"), "the key goes in x-api-key only")
		body := r.JSON()
		require.Equal(t, "claude-sonnet-4-20250514", body["model"])
		require.EqualValues(t, config.DefaultAnthropicMaxTokens, body["max_tokens"], "the client set no max_tokens")
		require.Equal(t, i == 1, body["stream"] == true)
	}

	// The example gives anthropic 5 retries (the global block says 2): three
	// rate-limited answers (429 rate_limit_error) in a row are retried through.
	ant.Script(fakeupstream.Reply{Status: 429}, fakeupstream.Reply{Status: 429}, fakeupstream.Reply{Status: 429})
	resp, err = c.Chat.Completions.New(context.Background(), p)
	require.NoError(t, err)
	require.Equal(t, "Hello from the fake upstream!", resp.Choices[0].Message.Content)
	require.Equal(t, 2+4, ant.Count())

	for name, model := range map[string]string{"ollama": "llama3.2", "vllm": "qwen2.5"} {
		up := ups[name]
		p := userMsg("hi")
		p.Model = name + "/" + model
		resp, err := c.Chat.Completions.New(context.Background(), p)
		require.NoError(t, err, name)
		require.Equal(t, "Hello from the fake upstream!", resp.Choices[0].Message.Content, name)
		require.Equal(t, 1, up.Count(), name)
	}
}
