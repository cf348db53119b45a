package providers_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/bufpool"
	"github.com/switchyard/switchyard/providers"
)

// TestPiecesReader: every reader reads the whole body, by Read (any buffer size)
// or WriteTo, and reading one leaves the pieces whole for the next (a retry).
func TestPiecesReader(t *testing.T) {
	p := providers.Pieces{[]byte(`{"a":`), []byte(`[1,2,3]`), nil, []byte(`}`)}
	const want = `{"a":[1,2,3]}`
	require.Equal(t, int64(len(want)), p.Len())
	reader := func() io.ReadCloser {
		rd, ok := p.ReaderOf(bufpool.Ref{})
		require.True(t, ok, "a body of no lent buffer")
		return rd
	}
	t.Run("read one byte at a time", func(t *testing.T) {
		got, err := io.ReadAll(iotest.OneByteReader(reader()))
		require.NoError(t, err)
		require.Equal(t, want, string(got))
	})
	t.Run("iotest", func(t *testing.T) {
		require.NoError(t, iotest.TestReader(reader(), []byte(want)))
	})
	t.Run("write to", func(t *testing.T) {
		var b bytes.Buffer
		n, err := reader().(io.WriterTo).WriteTo(&b)
		require.NoError(t, err)
		require.Equal(t, int64(len(want)), n)
		require.Equal(t, want, b.String())
	})
	t.Run("pieces left whole", func(t *testing.T) {
		_, _ = io.ReadAll(reader())
		got, err := io.ReadAll(reader())
		require.NoError(t, err)
		require.Equal(t, want, string(got))
	})
}

// A reader of a lent buffer holds it until closed, reads nothing after, and
// cannot be made once every holder let go.
func TestPiecesReaderOfALentBuffer(t *testing.T) {
	ref := bufpool.Get(bufpool.MinSize)
	buf := append(ref.Buf(), `[{"role":"user","content":"`+strings.Repeat("hi ", providers.SmallBody)+`"}]`...)
	p := providers.Pieces{[]byte(`{"messages":`), buf, []byte(`}`)}
	rd, ok := p.ReaderOf(ref)
	require.True(t, ok)
	ref.Release() // the handler is done; the reader still holds the buffer
	require.True(t, ref.Hold(), "the buffer went back while a reader held it")
	ref.Release()
	b := make([]byte, 5)
	n, err := rd.Read(b)
	require.NoError(t, err)
	require.Equal(t, `{"mes`, string(b[:n]))
	require.NoError(t, rd.Close())
	require.NoError(t, rd.Close(), "a second close")
	_, err = rd.Read(b)
	require.ErrorIs(t, err, providers.ErrBodyReleased)
	_, err = rd.(io.WriterTo).WriteTo(io.Discard)
	require.ErrorIs(t, err, providers.ErrBodyReleased)
	require.False(t, ref.Hold(), "held after the reader, the last holder, closed")
	_, ok = p.ReaderOf(ref)
	require.False(t, ok, "a reader made of a buffer let go")
}

// A small body is read from a copy, which net/http knows to be in memory: the
// request's headers and body reach the upstream in one write, and the copy
// does not hold a lent buffer the pieces pointed into.
func TestPiecesReaderOfASmallBody(t *testing.T) {
	ref := bufpool.Get(bufpool.MinSize)
	buf := append(ref.Buf(), `[{"role":"user","content":"hi"}]`...)
	p := providers.Pieces{[]byte(`{"messages":`), buf, []byte(`}`)}
	rd, ok := p.ReaderOf(ref)
	require.True(t, ok)
	ref.Release()
	require.False(t, ref.Hold(), "a copy holds no lent buffer")
	got, err := io.ReadAll(rd)
	require.NoError(t, err)
	require.Equal(t, `{"messages":[{"role":"user","content":"hi"}]}`, string(got))

	for _, tc := range []struct {
		name   string
		body   string
		writes func(n int) bool
	}{
		{"small: one write", `{"a":1}`, func(n int) bool { return n == 1 }},
		{"large: headers flushed first", `{"a":"` + strings.Repeat("x", providers.SmallBody) + `"}`, func(n int) bool { return n > 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := providers.Pieces{[]byte(tc.body[:3]), []byte(tc.body[3:])}
			body, ok := p.ReaderOf(bufpool.Ref{})
			require.True(t, ok)
			req, err := http.NewRequest(http.MethodPost, "http://upstream.test/v1/chat/completions", body)
			require.NoError(t, err)
			req.ContentLength = p.Len()
			var conn countingConn
			require.NoError(t, req.Write(&conn))
			require.True(t, tc.writes(conn.n), "%d writes", conn.n)
			require.True(t, strings.HasSuffix(conn.buf.String(), "\r\n\r\n"+tc.body))
		})
	}
}

// countingConn counts the writes made to it (no WriteByte: net/http buffers
// its writes to it as it does to a connection).
type countingConn struct {
	n   int
	buf bytes.Buffer
}

func (c *countingConn) Write(b []byte) (int, error) {
	c.n++
	return c.buf.Write(b)
}
