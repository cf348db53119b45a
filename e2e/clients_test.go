package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/fakeupstream"
)

// startForClients runs Switchyard with keys, provider "up" and provider "cut"
// (every stream cut after two events).
func startForClients(t *testing.T) *gateway {
	t.Helper()
	cut := fakeupstream.New()
	t.Cleanup(cut.Close)
	cut.SetDefault(fakeupstream.Reply{CutAfter: 3})
	return start(t, keysYAML, withYAML("  cut:\n    type: openai\n    base_url: "+cut.URL+"\n"))
}

func runCmd(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	cmd.Env = append(os.Environ(), "SWITCHYARD_MASTER_KEY=sk-master", "SWITCHYARD_ADMIN_KEY=sk-admin")
	out, err := cmd.CombinedOutput()
	t.Logf("%s:\n%s", cmd.Args, out)
	require.NoError(t, err)
	return string(out)
}

// TestTypeScriptClient runs the TypeScript client's node test suite.
func TestTypeScriptClient(t *testing.T) {
	t.Parallel()
	g := startForClients(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "--test", "../clients/typescript/test/")
	cmd.Env = append(os.Environ(), "SWITCHYARD_GRPC_URL=http://"+g.app.GRPCAddr(), "SWITCHYARD_KEY=sk-master", "SWITCHYARD_ADMIN_KEY=sk-admin")
	out, err := cmd.CombinedOutput()
	t.Logf("node --test clients/typescript:\n%s", out)
	require.NoError(t, err)
}

// TestExamples builds and runs the README's examples against a started gateway.
func TestExamples(t *testing.T) {
	t.Parallel()
	g := startForClients(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "example")
	runCmd(t, exec.CommandContext(ctx, "go", "build", "-o", bin, "../examples/go"))
	out := runCmd(t, exec.CommandContext(ctx, bin, "-addr", g.app.GRPCAddr(), "-model", "up/gpt-4o"))
	require.Contains(t, out, "chat: Hello from the fake upstream!")
	require.Contains(t, out, "stream: Hello from the fake upstream!")
	require.Contains(t, out, "breaker: up  BREAKER_STATE_CLOSED")

	out = runCmd(t, exec.CommandContext(ctx, "node", "../examples/node/example.mjs", "http://"+g.app.GRPCAddr(), "up/gpt-4o"))
	require.Contains(t, out, "chat: Hello from the fake upstream!")
	require.Contains(t, out, "stream: Hello from the fake upstream!")
	require.Contains(t, out, "breaker: up  CLOSED", "protoc-gen-es drops the enum prefix")
}
