package e2e

import (
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/fakeupstream"
)

// TestAClientThatDoesNotReadItsAnswerIsDropped: a non-stream answer larger than
// the sockets hold, to a client that never reads it, is written under the same
// bound as a stream's writes (server.stream_idle_timeout): the connection is
// closed once it runs out, and the handler and the answer are let go. Before, they
// were held for as long as the client kept the connection open.
func TestAClientThatDoesNotReadItsAnswerIsDropped(t *testing.T) {
	t.Parallel()
	g := start(t, "  stream_idle_timeout: 1s\n")
	g.up.SetDefault(fakeupstream.Reply{Text: strings.Repeat("word ", 2_000_000)}) // a 10 MB answer
	body := chatBody + "}"
	addr := strings.TrimPrefix(strings.TrimSuffix(g.base, "/v1"), "http://")
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer nc.Close()
	_, err = io.WriteString(nc, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "+
		strconv.Itoa(len(body))+"\r\n\r\n"+body)
	require.NoError(t, err)
	// The client reads nothing. It sends a byte now and then: once the gateway's
	// write has run out and it has closed the connection, these fail (however
	// long the gateway took to make the answer on a loaded machine).
	giveUp := time.Now().Add(60 * time.Second)
	for {
		if _, err := nc.Write([]byte("x")); err != nil {
			break
		}
		require.True(t, time.Now().Before(giveUp), "the gateway held a connection whose client read nothing")
		time.Sleep(50 * time.Millisecond)
	}
	g.up.SetDefault(fakeupstream.Reply{})
	alive(t, g)
}

// TestAClientThatPipelinesAndNeverReadsIsDropped: small answers to requests a
// client pipelines without reading any (no key needed: /health) fill the sockets
// at last; the write that then waits is bounded like any other, and the
// connection is closed, which the client sees as its own writes failing. Before,
// the gateway waited on its write, read no more, and held the connection (and the
// client's writes) for as long as the client kept it.
func TestAClientThatPipelinesAndNeverReadsIsDropped(t *testing.T) {
	t.Parallel()
	g := start(t, "  stream_idle_timeout: 1s\n")
	addr := strings.TrimPrefix(strings.TrimSuffix(g.base, "/v1"), "http://")
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer nc.Close()
	sent := make(chan error, 1)
	go func() {
		// Far more than the sockets hold: the gateway's writes wait before these end.
		_, err := io.WriteString(nc, strings.Repeat("GET /health HTTP/1.1\r\nHost: x\r\n\r\n", 1_000_000))
		sent <- err
	}()
	select {
	case err := <-sent:
		require.Error(t, err, "the gateway closed the connection while the client was still sending")
	case <-time.After(60 * time.Second):
		t.Fatal("the gateway held a connection whose client read nothing")
	}
	alive(t, g)
}
