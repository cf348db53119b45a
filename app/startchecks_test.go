package app_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/app"
	"github.com/switchyard/switchyard/config"
)

// A listen address that is not host:port is reported as such before the key
// check (which used to say "refusing to listen on notaport without a master key").
func TestStartChecksTheAddressFirst(t *testing.T) {
	t.Parallel()
	cfg := &config.Config{Server: config.Server{HTTPAddr: "notaport", GRPCAddr: "127.0.0.1:0"}}
	_, err := app.Start(context.Background(), cfg, slog.New(slog.DiscardHandler))
	require.EqualError(t, err,
		`config: server.http_addr: "notaport" is not a listen address: write host:port, such as 127.0.0.1:8080 or :8080`)
}

// A provider calling a hosted API without a key is named in a warning at start.
// The data dir cannot be created, so Start stops before any network call.
func TestStartWarnsAboutAMissingAPIKey(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	cfg := &config.Config{
		Server:    config.Server{HTTPAddr: "127.0.0.1:0", GRPCAddr: "127.0.0.1:0", DataDir: filepath.Join(file, "data")},
		Providers: map[string]*config.Provider{"a": {Type: "openai", BaseURL: "https://api.openai.com/v1"}},
	}
	var logs bytes.Buffer
	_, err := app.Start(context.Background(), cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	require.Error(t, err)
	require.Contains(t, logs.String(), `provider \"a\" has no API key: https://api.openai.com/v1 refuses every call without one (401)`)
}
