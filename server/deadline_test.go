package server

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// flushFails is a connection whose flush fails (the client has gone).
type flushFails struct{ *httptest.ResponseRecorder }

func (flushFails) FlushError() error                { return errors.New("client gone") }
func (flushFails) SetWriteDeadline(time.Time) error { return nil }

// TestABoundedWriterPassesAFailedFlushOn: the writer the front wraps around
// every request keeps what the connection says of a flush (an SSE stream learns
// so that its client has gone).
func TestABoundedWriterPassesAFailedFlushOn(t *testing.T) {
	t.Parallel()
	w := boundWrites(flushFails{httptest.NewRecorder()}, time.Minute)
	require.EqualError(t, http.NewResponseController(w).Flush(), "client gone")
	_, err := w.Write([]byte("x"))
	require.NoError(t, err)
}

// TestAnAnswerWrittenLongBeforeTheHandlerReturnsArrives: what a handler wrote
// sits in the connection's buffer until net/http flushes it after the handler
// returns; a handler that returns later than the write bound after its last write
// (cleanup, a loaded machine) still delivers it whole (settle).
func TestAnAnswerWrittenLongBeforeTheHandlerReturnsArrives(t *testing.T) {
	t.Parallel()
	const timeout = 50 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		bw := boundWrites(w, timeout)
		defer bw.settle()
		_, _ = bw.Write([]byte("the whole answer"))
		time.Sleep(4 * timeout) // past the deadline the write set
	}))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, "the whole answer", string(body))
}
