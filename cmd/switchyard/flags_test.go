package main

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/switchyard/switchyard/internal/testutil"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCommandLine(t *testing.T) {
	cases := []struct {
		name       string
		args       []string
		code       int
		stdout     []string // each must appear on stdout
		stderr     []string // each must appear on stderr
		emptyStdio bool     // nothing at all on stdout
	}{
		{name: "help", args: []string{"--help"}, code: 0,
			stdout: []string{"Usage: switchyard [flags]", "-http-addr", "default 127.0.0.1:8080", "-grpc-addr", "default 127.0.0.1:9090", "-config", "-log-format", "-log-level", "-version"}},
		{name: "short help", args: []string{"-h"}, code: 0, stdout: []string{"Usage: switchyard [flags]"}},
		{name: "positional argument drops nothing silently", args: []string{"serve", "--http-addr", "127.0.0.1:0"}, code: 2,
			stderr: []string{`unexpected argument "serve"`, "Usage: switchyard [flags]"}, emptyStdio: true},
		{name: "trailing positional", args: []string{"--http-addr", "127.0.0.1:0", "extra"}, code: 2,
			stderr: []string{`unexpected argument "extra"`}, emptyStdio: true},
		{name: "unknown flag", args: []string{"--bogus"}, code: 2,
			stderr: []string{"flag provided but not defined: -bogus", "Usage: switchyard [flags]"}, emptyStdio: true},
		{name: "unknown log format", args: []string{"--log-format", "xml"}, code: 2,
			stderr: []string{`--log-format "xml": want json or text`}, emptyStdio: true},
		{name: "unknown log level", args: []string{"--log-level", "chatty"}, code: 2,
			stderr: []string{`--log-level "chatty": want debug, info, warn or error`}, emptyStdio: true},
		{name: "version", args: []string{"--version"}, code: 0, stdout: []string{"switchyard ", "go1."}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), signalled{}, tc.args, &stdout, &stderr, tempEnv(t))
			require.Equal(t, tc.code, exitCode(err), "error: %v", err)
			for _, s := range tc.stdout {
				require.Contains(t, stdout.String(), s)
			}
			for _, s := range tc.stderr {
				require.Contains(t, stderr.String(), s)
			}
			if tc.emptyStdio {
				require.Empty(t, stdout.String(), "a refused command line starts nothing")
			}
		})
	}
}

func TestUnknownLogFormatFromEnvironment(t *testing.T) {
	env := func(k string) (string, bool) {
		if k == "SWITCHYARD_LOG_FORMAT" {
			return "xml", true
		}
		return "", false
	}
	err := run(context.Background(), signalled{}, nil, &bytes.Buffer{}, &bytes.Buffer{}, env)
	require.ErrorContains(t, err, `SWITCHYARD_LOG_FORMAT="xml": want json or text`)
	require.Equal(t, 1, exitCode(err))
}

// The built binary: exit codes as a shell sees them, and the version it logs at start.
func TestBinaryExitCodes(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "switchyard")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run())
	for _, tc := range []struct {
		args []string
		code int
	}{{[]string{"--help"}, 0}, {[]string{"-h"}, 0}, {[]string{"serve"}, 2}, {[]string{"--log-format", "xml"}, 2}, {[]string{"--version"}, 0}} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cmd := exec.Command(bin, tc.args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, tc.code, code, "stderr: %s", stderr.String())
			require.NotContains(t, stderr.String(), "help requested")
		})
	}
	out, err := exec.Command(bin, "--version").Output()
	require.NoError(t, err)
	require.Regexp(t, `^switchyard \S+ .*go1\.`, string(out))
}

func TestVersionLoggedAtStart(t *testing.T) {
	out := &testutil.LogBuffer{}
	err := run(context.Background(), signalled{}, []string{"--config", "/nonexistent.yaml"}, out, &bytes.Buffer{}, noEnv)
	require.Error(t, err)
	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(strings.SplitN(out.String(), "\n", 2)[0]), &rec))
	require.Equal(t, "Switchyard starting", rec["msg"])
	require.NotEmpty(t, rec["version"])
}

func TestLogLevel(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in      string
		debug   bool
		info    bool
		invalid bool
	}{
		{"", false, true, false}, {"info", false, true, false}, {"debug", true, true, false}, {"DEBUG", true, true, false},
		{"warn", false, false, false}, {"error", false, false, false}, {"loud", false, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			level, err := parseLevel(tc.in)
			if tc.invalid {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			log := newLogger(&bytes.Buffer{}, "json", level)
			require.Equal(t, tc.debug, log.Enabled(context.Background(), slog.LevelDebug))
			require.Equal(t, tc.info, log.Enabled(context.Background(), slog.LevelInfo))
		})
	}
}

// Log durations carry their unit: milliseconds, under a name ending in _ms.
func TestLogDurationsInMilliseconds(t *testing.T) {
	for _, format := range []string{"json", "text"} {
		t.Run(format, func(t *testing.T) {
			var b bytes.Buffer
			newLogger(&b, format, slog.LevelInfo).Info("x", "latency", 32039*time.Microsecond, "deadline", 10*time.Second)
			switch format {
			case "json":
				var rec map[string]any
				require.NoError(t, json.Unmarshal(b.Bytes(), &rec))
				require.Equal(t, 32.039, rec["latency_ms"])
				require.Equal(t, float64(10000), rec["deadline_ms"])
				require.NotContains(t, rec, "latency")
			case "text":
				require.Contains(t, b.String(), "latency_ms=32.039 deadline_ms=10000")
			}
		})
	}
}
