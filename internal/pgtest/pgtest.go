// Package pgtest runs a real PostgreSQL (Debian's postgresql package; CI installs
// it with scripts/tools.sh) for tests: initdb in a temporary directory, pg_ctl on
// a free loopback port, trust authentication for user "sw", stopped and removed at
// the test's cleanup. initdb refuses to run as root, so as root the server runs as
// the postgres user. Stop/Start take the server away and bring it back on the same
// port with its data; Pause/Resume freeze every server process (SIGSTOP/SIGCONT),
// a stalled store rather than a refused one.
package pgtest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/switchyard/switchyard/internal/testutil"
)

// Bin finds the directory of initdb and pg_ctl: $PG_BIN, else the newest
// /usr/lib/postgresql/*/bin, else $PATH.
func Bin() (string, error) {
	if b := os.Getenv("PG_BIN"); b != "" {
		return b, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("pgtest: initdb not found (apt-get install postgresql, or run scripts/tools.sh)")
}

func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

// Server is one PostgreSQL cluster.
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	cred *syscall.Credential // the postgres user's, when running as root

	mu      sync.Mutex
	running bool
	paused  []int
}

// New starts a cluster for t, stopped and removed at t's cleanup. A missing
// PostgreSQL fails the test, naming how to get it.
func New(t testing.TB) *Server {
	t.Helper()
	bin, err := Bin()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, bin: bin, dir: dir}
	t.Cleanup(func() {
		s.Resume()
		s.Stop()
		_ = os.RemoveAll(dir)
	})
	if os.Geteuid() == 0 {
		if err := s.asPostgres(); err != nil {
			t.Fatalf("pgtest: %v", err)
		}
	}
	if out, err := s.run("initdb", "-D", s.data(), "-A", "trust", "-U", "sw", "--no-sync", "-E", "UTF8"); err != nil {
		t.Fatalf("pgtest: initdb: %v\n%s", err, out)
	}
	for range 5 { // a free port can be taken between choosing it and binding it
		if s.port, err = testutil.FreePort(); err != nil {
			t.Fatalf("pgtest: %v", err)
		}
		if err = s.start(); err == nil {
			return s
		}
	}
	t.Fatalf("pgtest: %v", err)
	return nil
}

// asPostgres runs the cluster as the postgres user (initdb refuses root).
func (s *Server) asPostgres() error {
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("running as root needs the postgres user (apt-get install postgresql): %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	if err := os.Chmod(s.dir, 0o755); err != nil {
		return err
	}
	return os.Chown(s.dir, uid, gid)
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

func (s *Server) run(tool string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(s.bin, tool), args...)
	cmd.Dir = s.dir
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	return cmd.CombinedOutput()
}

// DSN connects as sw to database postgres, without TLS.
func (s *Server) DSN() string {
	return fmt.Sprintf("postgres://sw@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

// Addr is host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running {
		return nil
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off", s.port, s.dir)
	out, err := s.run("pg_ctl", "-D", s.data(), "-o", opts, "-l", filepath.Join(s.dir, "server.log"), "-w", "-t", "30", "start")
	if err != nil {
		raw, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
		return fmt.Errorf("pg_ctl start on port %d: %v\n%s\n%s", s.port, err, out, testutil.LastLines(string(raw), 5, "\n"))
	}
	s.running = true
	return nil
}

// Start starts a stopped server again on the same port, with its data.
func (s *Server) Start() {
	s.t.Helper()
	if err := s.start(); err != nil {
		s.t.Fatalf("pgtest: %v", err)
	}
}

// Stop shuts the server down at once (pg_ctl stop -m immediate) and waits for it.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running {
		return
	}
	if out, err := s.run("pg_ctl", "-D", s.data(), "-m", "immediate", "-w", "stop"); err != nil {
		s.t.Logf("pgtest: pg_ctl stop: %v\n%s", err, out)
	}
	s.running = false
}

// Pause freezes the postmaster and every backend (SIGSTOP): connections stay open
// and nothing answers, as with a stalled database host.
func (s *Server) Pause() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	pids, err := s.pids()
	if err != nil {
		s.t.Fatalf("pgtest: %v", err)
	}
	for _, pid := range pids {
		if syscall.Kill(pid, syscall.SIGSTOP) == nil {
			s.paused = append(s.paused, pid)
		}
	}
}

// Resume undoes Pause.
func (s *Server) Resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, pid := range s.paused {
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
	s.paused = nil
}

// pids is the postmaster (from postmaster.pid) and its children (from /proc).
func (s *Server) pids() ([]int, error) {
	raw, err := os.ReadFile(filepath.Join(s.data(), "postmaster.pid"))
	if err != nil {
		return nil, err
	}
	first, _, _ := strings.Cut(string(raw), "\n")
	master, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		return nil, fmt.Errorf("postmaster.pid: %w", err)
	}
	pids := []int{master}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after the last ')'.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 {
			if ppid, _ := strconv.Atoi(fields[1]); ppid == master {
				pids = append(pids, pid)
			}
		}
	}
	return pids, nil
}
