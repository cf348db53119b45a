package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// An answer the upstream cut (a chunked body without its last chunk, a body
// shorter than its Content-Length) reaches the client broken, never as a
// complete answer, and its request line and record say it failed: 502,
// stream_incomplete, as a chat stream cut after its first byte.
func TestPassthroughAnswerCutByTheUpstreamIsBroken(t *testing.T) {
	t.Parallel()
	cut := func(length string) func(http.ResponseWriter, *http.Request) {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/octet-stream")
			if length != "" {
				w.Header().Set("Content-Length", length)
			}
			_, _ = io.WriteString(w, strings.Repeat("b", 1000))
			w.(http.Flusher).Flush()
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close() // no last chunk, or 1000 bytes of 2000
			}
		}
	}
	for _, tc := range []struct {
		name   string
		handle func(http.ResponseWriter, *http.Request)
	}{
		{"chunked, without its last chunk", cut("")},
		{"shorter than its Content-Length", cut("2000")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up := newRawUpstream(t, tc.handle)
			g := startPassthrough(t, up, "  admin_key: sk-admin\n", "")
			req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(g.base, "/v1")+"/p/raw/files/file-1/content", http.NoBody)
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer sk-master")
			req.Header.Set("X-Request-Id", "cut-answer")
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode, "the status was relayed before the cut")
			b, err := io.ReadAll(resp.Body)
			require.ErrorIs(t, err, io.ErrUnexpectedEOF, "the client sees the answer broken, not complete")
			require.Equal(t, strings.Repeat("b", 1000), string(b), "what came before the cut was relayed")

			var line logRecord
			require.Eventually(t, func() bool {
				for _, rec := range logsSince(t, g, 0) {
					if rec["msg"] == "request" && rec["request_id"] == "cut-answer" {
						line = rec
					}
				}
				return line != nil
			}, 5*time.Second, 10*time.Millisecond, "the call has its request line")
			require.EqualValues(t, http.StatusBadGateway, line["status"], "%v", line)
			require.Equal(t, "WARN", line["level"], "%v", line)
			rec := waitRecords(t, g, 1)[0].(map[string]any)
			require.EqualValues(t, http.StatusBadGateway, rec["status"], "%v", rec)
			require.Equal(t, "stream_incomplete", rec["error_code"], "%v", rec)
		})
	}
}

// A client that goes away in the middle of an answer is not the upstream's
// fault: its call is cancelled (499, cancelled), not stream_incomplete.
func TestPassthroughClientGoneMidAnswerIsCancelled(t *testing.T) {
	t.Parallel()
	up := newRawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	g := startPassthrough(t, up, "  admin_key: sk-admin\n", "")
	req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(g.base, "/v1")+"/p/raw/events", http.NoBody)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer sk-master")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	first := make([]byte, len("data: one\n\n"))
	_, err = io.ReadFull(resp.Body, first)
	require.NoError(t, err, "the answer began")
	require.NoError(t, resp.Body.Close(), "the client leaves before the answer's end")

	rec := waitRecords(t, g, 1)[0].(map[string]any)
	require.EqualValues(t, 499, rec["status"], "%v", rec)
	require.Equal(t, "cancelled", rec["error_code"], "%v", rec)
}
