package testutil

import (
	"net"
	"strings"
)

// FreePort picks a loopback port nothing listens on, by binding 127.0.0.1:0 and
// closing it, for servers that cannot be told to pick their own (redis-server,
// postgres); the caller retries if another process takes it meanwhile.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// LastLines is the last n lines of a server's log, joined by sep, for an error
// that says why the server did not start.
func LastLines(s string, n int, sep string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, sep)
}
