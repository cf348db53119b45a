package providers

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/bufpool"
)

// piecesOf cuts body into pieces of the sizes given (the rest last), an empty
// one among them.
func piecesOf(body []byte, sizes ...int) Pieces {
	var p Pieces
	for _, n := range sizes {
		n = min(n, len(body))
		p, body = append(p, body[:n], nil), body[n:]
	}
	return append(p, body)
}

func bodyOf(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	return b
}

// TestHTTPClientSendsPiecesWhole: a body sent from pieces reaches the upstream
// whole, with its length, whatever its size (the one-write path for a body
// within its Content-Length, net/http's copies after a buffer's worth).
func TestHTTPClientSendsPiecesWhole(t *testing.T) {
	got := make(chan []byte, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		require.Equal(t, strconv.Itoa(len(b)), r.Header.Get("Content-Length"))
		got <- b
	}))
	defer up.Close()
	client := HTTPClient(time.Second, 0, nil)
	for _, n := range []int{1, 3 << 10, 40 << 10, 600 << 10} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			body := bodyOf(n)
			p := piecesOf(body, n/3, n/2)
			for range 2 { // a second request on the kept-alive connection
				rd, ok := p.ReaderOf(bufpool.Ref{})
				require.True(t, ok)
				req, err := http.NewRequest(http.MethodPost, up.URL, rd)
				require.NoError(t, err)
				req.ContentLength = p.Len()
				resp, err := client.Do(req)
				require.NoError(t, err)
				_ = resp.Body.Close()
				require.True(t, bytes.Equal(body, <-got), "the upstream's body is the one sent")
			}
		})
	}
}

// TestBodyConnReadFrom: a pieces reader within the limit is written at once
// and counted off the limit; one longer than the limit, or any other reader,
// is copied as a TCP connection copies (no more than the limit); a closed one
// reads as closed.
func TestBodyConnReadFrom(t *testing.T) {
	body := bodyOf(100 << 10)
	p := piecesOf(body, 10, 70<<10)
	reader, closed := readersOf(t, p)
	cases := []struct {
		name    string
		r       io.Reader
		limit   int64
		want    []byte
		wantErr error
	}{
		{"pieces within the limit", reader(), int64(len(body)), body, nil},
		{"pieces within a larger limit", reader(), int64(len(body)) + 5, body, nil},
		{"pieces past the limit", reader(), 1000, body[:1000], nil},
		{"another reader", bytes.NewReader(body), int64(len(body)), body, nil},
		{"a closed pieces reader", closed, int64(len(body)), nil, ErrBodyReleased},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conn, peer := tcpPair(t)
			read := make(chan []byte, 1)
			go func() {
				b, _ := io.ReadAll(peer)
				read <- b
			}()
			lr := &io.LimitedReader{R: tc.r, N: tc.limit}
			n, err := bodyConn{conn}.ReadFrom(lr)
			require.ErrorIs(t, err, tc.wantErr)
			require.Equal(t, int64(len(tc.want)), n)
			require.Equal(t, tc.limit-n, lr.N, "what was written is counted off the limit")
			require.NoError(t, conn.Close())
			require.True(t, bytes.Equal(tc.want, <-read), "the peer read what was written")
		})
	}
}

// sendPieces takes a pieces reader within its limit whole, in one go, and
// counts it off the limit; it leaves one past its limit, and any other reader,
// as they were (net/http's own copy then reads them); a closed one is refused.
func TestSendPiecesTakesOnlyPiecesWithinTheLimit(t *testing.T) {
	body := bodyOf(10 << 10)
	p := piecesOf(body, 10, 7<<10)
	reader, closed := readersOf(t, p)
	cases := []struct {
		name    string
		r       io.Reader
		limit   int64
		taken   bool
		wantErr error
	}{
		{"pieces within the limit", reader(), int64(len(body)), true, nil},
		{"pieces past the limit", reader(), 1000, false, nil},
		{"another reader", bytes.NewReader(body), int64(len(body)), false, nil},
		{"a closed pieces reader", closed, int64(len(body)), true, ErrBodyReleased},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var w bytes.Buffer
			lr := &io.LimitedReader{R: tc.r, N: tc.limit}
			n, ok, err := sendPieces(&w, lr)
			require.Equal(t, tc.taken, ok)
			require.ErrorIs(t, err, tc.wantErr)
			require.Equal(t, int64(w.Len()), n)
			require.Equal(t, tc.limit-n, lr.N, "what was written is counted off the limit")
			switch {
			case ok && err == nil:
				require.True(t, bytes.Equal(body, w.Bytes()), "the whole body, in one go")
			case !ok:
				require.Zero(t, w.Len(), "nothing written")
				rest, err := io.ReadAll(lr)
				require.NoError(t, err)
				require.True(t, bytes.Equal(body[:tc.limit], rest), "the reader left as it was")
			}
		})
	}
}

// readersOf makes readers of p (each a new one) and one of them closed.
func readersOf(t *testing.T, p Pieces) (reader func() io.Reader, closed io.Reader) {
	reader = func() io.Reader {
		rd, ok := p.ReaderOf(bufpool.Ref{})
		require.True(t, ok)
		return rd
	}
	closed = reader()
	require.NoError(t, closed.(io.Closer).Close())
	return reader, closed
}

func tcpPair(t *testing.T) (*net.TCPConn, net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	peer, err := ln.Accept()
	require.NoError(t, err)
	t.Cleanup(func() { _ = peer.Close(); _ = c.Close() })
	return c.(*net.TCPConn), peer
}
