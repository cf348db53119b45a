package redisstate

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/redistest"
)

// slowAnswers is a TCP relay to srv that, while slow is set, holds each of
// Redis's answers for longer than the client's timeout: the call has run in
// Redis, and its client gives up on it all the same (a network that delays, or
// a slow command of another client's that runs between Redis taking a call and
// writing its answer). A connection's first answer (its handshake's) is never
// held. It returns a client of the test's prefix through it.
func slowAnswers(t *testing.T, srv *redistest.Server, onError string) (*Client, *atomic.Bool) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	slow := new(atomic.Bool)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	track := func(c net.Conn) {
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", srv.Addr())
			if err != nil {
				client.Close()
				continue
			}
			track(client)
			track(up)
			wg.Add(2)
			go func() { // calls go to Redis at once
				defer wg.Done()
				io.Copy(up, client)
				up.Close()
			}()
			go func() { // answers wait while slow is set
				defer wg.Done()
				defer client.Close()
				buf := make([]byte, 32<<10)
				for first := true; ; first = false {
					n, err := up.Read(buf)
					if err != nil {
						return
					}
					if slow.Load() && !first {
						time.Sleep(2 * DefaultTimeout)
					}
					if _, err := client.Write(buf[:n]); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	c, err := Open(Config{URL: "redis://" + ln.Addr().String() + "/0", OnError: onError, Prefix: "t:" + t.Name() + ":"})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c, slow
}
