// Package redistest runs a real redis-server (the Debian package; CI installs it
// with scripts/tools.sh) for tests: on a free loopback port, in a temporary
// directory, killed at the test's cleanup. Stop and Start let a test take Redis
// away mid-test (SIGKILL) and bring it back on the same port with its data (an
// append-only file that Redis writes before it answers, so a killed process
// loses nothing: appendfsync no, since with everysec Redis postpones that write
// by up to two seconds while a background fsync is slow (a loaded CI disk),
// answering meanwhile, and a write acknowledged then was lost to the SIGKILL;
// fsync guards against a machine's crash, which these tests do not make).
package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard/switchyard/internal/testutil"
)

// Binary is the server run; REDIS_SERVER overrides it (a Valkey binary works too).
func Binary() string {
	if b := os.Getenv("REDIS_SERVER"); b != "" {
		return b
	}
	return "redis-server"
}

// startTimeout bounds the wait for a started server to answer PING.
const startTimeout = 10 * time.Second

// Server is one running (or stopped) redis-server.
type Server struct {
	t    testing.TB
	dir  string
	port int

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// New starts a redis-server for t and stops it at t's cleanup. A missing binary
// fails the test (the suite installs it), naming how to get it.
func New(t testing.TB) *Server {
	t.Helper()
	if _, err := exec.LookPath(Binary()); err != nil {
		t.Fatalf("redistest: %s not found (apt-get install redis-server, or run scripts/tools.sh): %v", Binary(), err)
	}
	s := &Server{t: t, dir: t.TempDir()}
	var err error
	for range 5 { // a free port can be taken between choosing it and binding it
		if s.port, err = testutil.FreePort(); err != nil {
			t.Fatalf("redistest: %v", err)
		}
		if err = s.start(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Addr is host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL is the redis:// URL of the server (database 0).
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Stop kills the server (SIGKILL: an outage, not a shutdown) and waits for it to exit.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// Start starts a stopped server again on the same port, with the data it had. It
// fails the test if the port cannot be bound.
func (s *Server) Start() {
	s.t.Helper()
	var err error
	deadline := time.Now().Add(startTimeout)
	for {
		if err = s.start(); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // the old socket may linger briefly
	}
	if err != nil {
		s.t.Fatalf("redistest: restart on port %d: %v", s.port, err)
	}
}

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return nil
	}
	logPath := filepath.Join(s.dir, fmt.Sprintf("redis-%d.log", time.Now().UnixNano()))
	cmd := exec.Command(Binary(), "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--dir", s.dir, "--save", "", "--appendonly", "yes", "--appendfsync", "no", "--logfile", logPath, "--daemonize", "no")
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	if err := waitPing(s.Addr(), done); err != nil {
		_ = cmd.Process.Kill()
		<-done
		raw, _ := os.ReadFile(logPath)
		return fmt.Errorf("%w; log: %s", err, testutil.LastLines(string(raw), 5, " | "))
	}
	s.cmd, s.done = cmd, done
	return nil
}

// waitPing waits until addr answers PING with PONG, or the process exits.
func waitPing(addr string, exited <-chan struct{}) error {
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return errors.New("redis-server exited at start")
		default:
		}
		if ping(addr) == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("redis-server on %s did not answer PING within %s", addr, startTimeout)
}

func ping(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}
