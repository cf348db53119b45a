package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/pgtest"
	"github.com/switchyard/switchyard/usage"
)

// binary is a started gateway binary: its REST address and its log (stdout).
type binary struct {
	cmd  *exec.Cmd
	addr string
	mu   sync.Mutex
	logs strings.Builder
	eof  chan struct{} // closed once stdout is read to its end (the process exited)
}

func (b *binary) log() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.logs.String()
}

// wait waits for the process to exit, its log read to the end first: Wait
// closes the pipe, and a line not read by then would be lost.
func (b *binary) wait(timeout time.Duration) error {
	select {
	case <-b.eof:
	case <-time.After(timeout):
		return fmt.Errorf("the gateway did not exit within %s", timeout)
	}
	return b.cmd.Wait()
}

// startBinary builds cmd/switchyard and runs it with configText, returning once
// it says it is serving.
func startBinary(t *testing.T, configText string) *binary {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "switchyard")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/switchyard").CombinedOutput()
	require.NoError(t, err, string(out))
	cfgPath := filepath.Join(dir, "switchyard.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(configText), 0o600))
	b := &binary{cmd: exec.Command(bin, "--config", cfgPath), eof: make(chan struct{})}
	b.cmd.Env = cleanEnv()
	stdout, err := b.cmd.StdoutPipe()
	require.NoError(t, err)
	b.cmd.Stderr = os.Stderr
	require.NoError(t, b.cmd.Start())
	t.Cleanup(func() { _ = b.cmd.Process.Kill(); <-b.eof; _ = b.cmd.Wait() })
	serving := make(chan string, 1)
	go func() {
		defer close(b.eof)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			b.mu.Lock()
			b.logs.WriteString(sc.Text() + "\n")
			b.mu.Unlock()
			var rec map[string]any
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec["msg"] == "Switchyard is serving" {
				h, _ := rec["http"].(string)
				serving <- strings.TrimPrefix(h, "http://")
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case b.addr = <-serving:
		return b
	case <-time.After(60 * time.Second):
		t.Fatal("the gateway did not say it was serving")
	}
	return nil
}

// TestUsageDurableUnderSIGTERM: a gateway under load (32 clients, unary and
// stream) gets SIGTERM; every request it answered is a row in its store after
// it exits, on both stores. The writer is set never to flush on its own
// (flush_interval 1h, batches larger than the queue), so every row is one the
// shutdown drain wrote.
func TestUsageDurableUnderSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	cases := map[string]func(t *testing.T, data string) (config string, open func() (usage.Store, error)){
		"sqlite": func(t *testing.T, data string) (string, func() (usage.Store, error)) {
			return "", func() (usage.Store, error) {
				return usage.OpenSQLite(context.Background(), filepath.Join(data, usage.FileName))
			}
		},
		"postgres": func(t *testing.T, _ string) (string, func() (usage.Store, error)) {
			pg := pgtest.New(t)
			return "  store: postgres\n  dsn: " + pg.DSN() + "\n", func() (usage.Store, error) {
				return usage.OpenPostgres(context.Background(), pg.DSN())
			}
		},
	}
	for name, store := range cases {
		t.Run(name, func(t *testing.T) {
			data := t.TempDir()
			storeYAML, open := store(t, data)
			answered := loadUntilSIGTERM(t, "server:\n  http_addr: 127.0.0.1:0\n  grpc_addr: 127.0.0.1:0\n  data_dir: "+data+"\n"+
				"  drain_timeout: 10s\nproviders:\n  sim:\n    type: simulator\n    simulator: {time_to_first_token: 5ms, token_delay: 1ms, tokens: 8}\n"+
				"usage:\n"+storeYAML+"  flush_interval: 1h\n  batch_size: 100000\npricing:\n  sim/sim-1: {input: 1, output: 2}\n")
			st, err := open()
			require.NoError(t, err)
			defer st.Close()
			groups, err := st.Query(context.Background(), usage.Query{GroupBy: []string{usage.ByStatus}})
			require.NoError(t, err)
			rows := map[string]int64{}
			for _, g := range groups {
				rows[g.Key[usage.ByStatus]] = g.Requests
			}
			t.Logf("durability (%s): %d requests answered under load, %d rows with status 200 after SIGTERM (all rows by status: %v)",
				name, answered, rows["200"], rows)
			require.Equal(t, answered, rows["200"], "rows = answered requests")
		})
	}
}

// loadUntilSIGTERM starts the gateway binary with config, loads it with 32
// clients (unary and stream) for 1.5 s, sends it SIGTERM, waits for it to exit
// having drained its ledger, and returns how many requests it answered in full.
func loadUntilSIGTERM(t *testing.T, config string) int64 {
	gw := startBinary(t, config)
	base := "http://" + gw.addr + "/v1/chat/completions"
	var answered atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 20 * time.Second}
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := `{"model":"sim/sim-1","messages":[{"role":"user","content":"hi"}]`
			if i%2 == 1 {
				body += `,"stream":true`
			}
			body += "}"
			for n := 0; n < 10000; n++ { // bounded
				select {
				case <-stop:
					return
				default:
				}
				resp, err := client.Post(base, "application/json", strings.NewReader(body))
				if err != nil {
					if !strings.Contains(err.Error(), "refused") {
						time.Sleep(5 * time.Millisecond)
					}
					continue
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err == nil && resp.StatusCode == http.StatusOK && (i%2 == 0 || strings.HasSuffix(string(b), "data: [DONE]\n\n")) {
					answered.Add(1)
				}
			}
		}()
	}
	time.Sleep(1500 * time.Millisecond)
	require.Positive(t, answered.Load(), "the load is running")
	require.NoError(t, gw.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, gw.wait(30*time.Second), gw.log())
	close(stop)
	wg.Wait()
	require.Contains(t, gw.log(), "usage ledger drained")
	return answered.Load()
}
