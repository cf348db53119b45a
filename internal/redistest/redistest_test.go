package redistest

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestServerAnswersStopsAndComesBackOnItsPort(t *testing.T) {
	t.Parallel()
	s := New(t)
	require.NoError(t, ping(s.Addr()))
	s.Stop()
	require.Error(t, ping(s.Addr()), "a stopped server refuses connections")
	s.Start()
	require.NoError(t, ping(s.Addr()))
	require.Equal(t, "redis://"+s.Addr()+"/0", s.URL())
}

func TestBusyPortIsRetriedOnAnother(t *testing.T) {
	t.Parallel()
	// A port taken by someone else makes redis-server exit at start: start says so.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	s := &Server{t: t, dir: t.TempDir(), port: l.Addr().(*net.TCPAddr).Port}
	require.Error(t, s.start(), "port "+strconv.Itoa(s.port)+" is busy")
}
