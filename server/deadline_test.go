package server

import (
	"errors"
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
