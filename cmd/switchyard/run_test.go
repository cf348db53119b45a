package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/testutil"
)

func noEnv(string) (string, bool) { return "", false }

// tempEnv is an empty environment apart from a temporary data dir.
func tempEnv(t *testing.T) func(string) (string, bool) {
	dir := t.TempDir()
	return func(k string) (string, bool) {
		if k == "SWITCHYARD_DATA_DIR" {
			return dir, true
		}
		return "", false
	}
}

// The README's first command: no config, no keys → a serving gateway on the simulator.
func TestRunWithoutConfigServesTheSimulator(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	out := &testutil.LogBuffer{}
	env := tempEnv(t)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, signalled{}, []string{"--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, out, io.Discard, env)
	}()
	var httpURL string
	require.Eventually(t, func() bool {
		for _, line := range strings.Split(out.String(), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "Switchyard is serving" {
				httpURL = rec["http"].(string)
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond)
	require.Contains(t, out.String(), "serving the built-in simulator", "it says what it is doing")
	for _, v := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OLLAMA_BASE_URL", "VLLM_BASE_URL"} {
		require.Contains(t, out.String(), v, "and how to add real providers")
	}

	resp, err := http.Post(httpURL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"sim-1","messages":[{"role":"user","content":"hello"}]}`))
	require.NoError(t, err)
	var body struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	require.NotEmpty(t, body.Choices[0].Message.Content)

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
	require.Contains(t, out.String(), "stopped")
}

func TestRunRefusesPublicBindWithoutKey(t *testing.T) {
	err := run(context.Background(), signalled{}, []string{"--http-addr", "0.0.0.0:0", "--grpc-addr", "127.0.0.1:0"}, io.Discard, io.Discard, noEnv)
	require.ErrorContains(t, err, "without a master key")
}

func TestRunReportsConfigErrors(t *testing.T) {
	err := run(context.Background(), signalled{}, []string{"--config", "/nonexistent.yaml"}, io.Discard, io.Discard, noEnv)
	require.ErrorContains(t, err, "nonexistent.yaml")
}
