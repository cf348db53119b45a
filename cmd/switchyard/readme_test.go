package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// runMainEnv makes the test binary run main instead of the tests (TestMain), so
// that a test sees what the command itself prints and its exit status.
const runMainEnv = "SWITCHYARD_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestReadmeConfigErrorIsWhatTheCommandPrints: the README's config-error
// example, run through main on the file it shows, prints its line on stderr,
// only the start-up log line on stdout, and exits with the status the README
// names.
func TestReadmeConfigErrorIsWhatTheCommandPrints(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	before, example, ok := strings.Cut(string(raw), "<!-- config-error-example -->")
	require.True(t, ok)
	example, _, ok = strings.Cut(example, "<!-- /config-error-example -->")
	require.True(t, ok)
	before = strings.TrimSpace(before)
	words := before[strings.LastIndex(before, "\n\n"):] // the paragraph before the example
	status := regexp.MustCompile(`exits with status (\d+)`).FindStringSubmatch(words)
	require.NotNil(t, status, "the README says the exit status: %q", words)
	require.Contains(t, words, "on stderr", "the README says where the line goes")
	require.Contains(t, words, "on stdout", "the README says what else is printed")

	var file []string
	var printed string
	into := false
	for _, line := range strings.Split(example, "\n") {
		switch {
		case line == "$ cat switchyard.yaml":
			into = true
		case strings.HasPrefix(line, "$ switchyard --config switchyard.yaml"):
			into = false
		case strings.HasPrefix(line, "switchyard: "):
			printed = line
		case into:
			file = append(file, line)
		}
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "switchyard.yaml"), []byte(strings.Join(file, "\n")+"\n"), 0o600))
	cmd := exec.Command(os.Args[0], "--config", "switchyard.yaml")
	cmd.Dir = dir
	cmd.Env = []string{runMainEnv + "=1", "SWITCHYARD_DATA_DIR=" + dir}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "%v", err)
	require.Equal(t, status[1], strconv.Itoa(exit.ExitCode()))
	require.Equal(t, printed+"\n", stderr.String())
	var line struct{ Msg string }
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &line), "one JSON log line: %s", stdout.String())
	require.Equal(t, "Switchyard starting", line.Msg)
}

// TestReadmeLogFormatDefault: without --log-format or SWITCHYARD_LOG_FORMAT, logs
// are text on a terminal and JSON otherwise, as the README says.
func TestReadmeLogFormatDefault(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	require.True(t, strings.Contains(string(raw), "Logs are text on a terminal and JSON otherwise"),
		"the README says what the default log format is")

	file, err := os.Create(filepath.Join(t.TempDir(), "log"))
	require.NoError(t, err)
	defer file.Close()
	_, isJSON := newLogger(file, "", slog.LevelInfo).Handler().(*slog.JSONHandler)
	require.True(t, isJSON, "a file gets JSON")

	terminal, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no terminal to try: %v", err)
	}
	defer terminal.Close()
	_, isText := newLogger(terminal, "", slog.LevelInfo).Handler().(*slog.TextHandler)
	require.True(t, isText, "a terminal gets text")
}
