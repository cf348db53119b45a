// Package e2e drives a real Switchyard, started through the same constructor as
// cmd/switchyard, the way users do: the official OpenAI SDKs on the REST port, the
// generated gRPC client on the gRPC port, grpcurl for reflection, against fake
// OpenAI-compatible upstreams on 127.0.0.1:0.
package e2e

import (
	"context"
	"fmt"
	"github.com/switchyard/switchyard/internal/testutil"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/switchyard/switchyard/app"
	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/internal/fakeupstream"
)

// gateway is a started Switchyard with one fake upstream named "up".
type gateway struct {
	app  *app.App
	up   *fakeupstream.Server
	base string // REST base URL, e.g. http://127.0.0.1:PORT/v1
	conn *grpc.ClientConn
	logs *testutil.LogBuffer
}

// yamlOption adds YAML to the generated config: provider lines go into provider
// "up"'s block, the rest after the providers.
type yamlOption struct {
	provider, yaml string
	app            []app.Option
}

// withApp passes options to app.Start.
func withApp(opts ...app.Option) yamlOption { return yamlOption{app: opts} }

// withYAML appends YAML to the generated config (more providers, top-level blocks).
func withYAML(text string) yamlOption { return yamlOption{yaml: text} }

// start runs Switchyard on 127.0.0.1:0 with provider "up" pointing at a fresh fake
// upstream; extra YAML may add server settings or providers.
func start(t *testing.T, serverYAML string, opts ...yamlOption) *gateway {
	t.Helper()
	up := fakeupstream.New()
	t.Cleanup(up.Close)
	return startWith(t, up, serverYAML, opts...)
}

// withProviderYAML adds lines to provider "up"'s block.
func withProviderYAML(text string) yamlOption { return yamlOption{provider: text} }

// startWith is start with a given fake upstream as provider "up".
func startWith(t *testing.T, up *fakeupstream.Server, serverYAML string, opts ...yamlOption) *gateway {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "server:\n  http_addr: 127.0.0.1:0\n  grpc_addr: 127.0.0.1:0\n  data_dir: %s\n%s", dataDirOf(t, serverYAML), stripDataDir(serverYAML))
	fmt.Fprintf(&b, "providers:\n  up:\n    type: openai\n    base_url: %s\n    api_key: sk-upstream\n", up.URL)
	for _, o := range opts {
		b.WriteString(o.provider)
	}
	for _, o := range opts {
		b.WriteString(o.yaml)
	}
	path := filepath.Join(t.TempDir(), "switchyard.yaml")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o600))
	cfg, err := config.Load(path, func(string) (string, bool) { return "", false })
	require.NoError(t, err)

	logs := &testutil.LogBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var appOpts []app.Option
	for _, o := range opts {
		appOpts = append(appOpts, o.app...)
	}
	a, err := app.Start(ctx, cfg, log, appOpts...)
	require.NoError(t, err)
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, a.Shutdown(sctx))
	})
	conn, err := grpc.NewClient(a.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return &gateway{app: a, up: up, base: "http://" + a.HTTPAddr() + "/v1", conn: conn, logs: logs}
}

// dataDirOf gives each gateway its own data dir unless serverYAML names one
// ("  data_dir: X" on its own line), so that tests never share stored state.
func dataDirOf(t *testing.T, serverYAML string) string {
	for _, line := range strings.Split(serverYAML, "\n") {
		if v, ok := strings.CutPrefix(line, "  data_dir: "); ok {
			return v
		}
	}
	return t.TempDir()
}

func stripDataDir(serverYAML string) string {
	var keep []string
	for _, line := range strings.Split(serverYAML, "\n") {
		if !strings.HasPrefix(line, "  data_dir: ") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}
