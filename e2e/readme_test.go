package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// readmeBlocks returns the README's ```sh blocks.
func readmeBlocks(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	var blocks []string
	var cur *strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case cur == nil && strings.HasPrefix(line, "```sh"):
			cur = &strings.Builder{}
		case cur != nil && strings.HasPrefix(line, "```"):
			blocks = append(blocks, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	return blocks
}

// The README stands alone: it names no file outside the repository.
func TestReadmeStandsAlone(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	require.NotRegexp(t, regexp.MustCompile(`\.\./[A-Za-z]`), string(b), "a clone has nothing outside the repository")
}

// cleanEnv is the test's environment without any Switchyard or provider setting, so
// that the gateway starts on the default set-up as a newcomer's would.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "SWITCHYARD_") || strings.HasSuffix(k, "_API_KEY") || strings.HasPrefix(k, "OTEL_") ||
			strings.HasPrefix(k, "RETRY_") || strings.HasPrefix(k, "CIRCUIT_BREAKER_") || k == "FAILOVER_ENABLED" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// startReadmeGateway builds cmd/switchyard and starts it as the README says, with no
// config and no keys, on free ports (the README says how to pick them); it returns
// the REST and gRPC addresses.
func startReadmeGateway(t *testing.T) (httpAddr, grpcAddr string) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "switchyard")
	build := exec.Command("go", "build", "-o", bin, "../cmd/switchyard")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))
	cmd := exec.Command(bin, "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0")
	cmd.Env = cleanEnv("SWITCHYARD_DATA_DIR=" + t.TempDir())
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	serving := make(chan [2]string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var rec map[string]any
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec["msg"] == "Switchyard is serving" {
				h, _ := rec["http"].(string)
				g, _ := rec["grpc"].(string)
				serving <- [2]string{h, g}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case a := <-serving:
		return strings.TrimPrefix(a[0], "http://"), strings.TrimPrefix(a[1], "http://")
	case <-time.After(30 * time.Second):
		t.Fatal("the gateway did not say it was serving")
	}
	return "", ""
}

// TestReadmeExamples runs every README shell block that talks to a running gateway,
// as written but for the ports, against a gateway started as the README says. curl
// fails on an HTTP error status, grpcurl on a gRPC error; an answer that carries an
// error (an in-band stream error included) fails too.
func TestReadmeExamples(t *testing.T) {
	httpAddr, grpcAddr := startReadmeGateway(t)
	home, _ := os.UserHomeDir()
	path := filepath.Join(home, ".cache", "switchyard", "bin") + string(os.PathListSeparator) + os.Getenv("PATH")
	ran := 0
	for i, block := range readmeBlocks(t) {
		if !strings.Contains(block, "localhost:8080") && !strings.Contains(block, "localhost:9090") {
			continue // not a call to a running gateway (set-up commands)
		}
		ran++
		first := strings.Fields(block)
		t.Run(fmt.Sprintf("block%02d_%s", i, first[0]), func(t *testing.T) {
			script := strings.NewReplacer("localhost:8080", httpAddr, "localhost:9090", grpcAddr).Replace(block)
			// The gateway is already running; the tools npm ci installs are installed.
			script = regexp.MustCompile(`(?m)^go run \./cmd/switchyard &.*$`).ReplaceAllString(script, "")
			script = strings.ReplaceAll(script, "npm ci && ", "")
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", "-c", "set -eo pipefail\ncurl() { command curl --fail-with-body \"$@\"; }\n"+script)
			cmd.Dir = ".."
			cmd.Env = cleanEnv("PATH=" + path)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s\n%s", script, out)
			require.NotContains(t, string(out), `"error"`, "%s\n%s", script, out)
			require.NotEmpty(t, strings.TrimSpace(string(out)))
		})
	}
	require.GreaterOrEqual(t, ran, 4, "the README's examples were found")
}
