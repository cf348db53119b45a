package server

import (
	"net/http"
	"strconv"
	"time"
)

// writeDeadline bounds each write of a long answer to a client (a stream, a
// passthrough body), so that a client that stops reading is dropped. Write
// deadlines are absolute, so a write needs one set within the timeout before
// it; setting one (a timer moved under the poller's lock) cost 2.4 % of a 1 KB
// stream's CPU when done for every event. It is set again only once a
// sixteenth of the timeout has passed since the last: a write then still has
// at least 15/16 of the timeout, and a stalled client is dropped a little
// sooner, never later.
type writeDeadline struct {
	timeout time.Duration // 0: no bound
	at      time.Time     // when it was last set
	now     func() time.Time
}

// before moves rc's write deadline, when due, before a write.
func (d *writeDeadline) before(rc *http.ResponseController) {
	if d.timeout <= 0 {
		return
	}
	now := d.clock()
	if !d.at.IsZero() && now.Sub(d.at) < d.timeout/16 {
		return
	}
	d.at = now
	_ = rc.SetWriteDeadline(now.Add(d.timeout))
}

func (d *writeDeadline) clock() time.Time {
	if d.now != nil {
		return d.now()
	}
	return time.Now()
}

// boundedWriter bounds every write of an answer, whatever writes it (an error,
// a health check, an admin answer, an answer after a long upstream call): a
// client that stops reading is dropped once a write has waited the timeout. A
// client that pipelines requests and reads none of their answers (small ones
// too: they fill the socket's buffers at last) held its connection and handler
// for as long as it kept the connection open.
type boundedWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
	d  writeDeadline
}

func boundWrites(w http.ResponseWriter, timeout time.Duration) *boundedWriter {
	return &boundedWriter{ResponseWriter: w, rc: http.NewResponseController(w), d: writeDeadline{timeout: timeout}}
}

// settle gives what net/http writes once the handler has returned (what the
// connection's buffer still holds, a chunked body's end) a whole timeout from
// then: a deadline set at the handler's last write could otherwise run out
// before that flush, and the client get nothing of an answer it was written.
func (b *boundedWriter) settle() { _ = b.rc.SetWriteDeadline(time.Now().Add(b.d.timeout)) }

func (b *boundedWriter) Write(p []byte) (int, error) {
	b.d.before(b.rc)
	return b.ResponseWriter.Write(p)
}

// FlushError passes on to the connection with its error (a client gone is seen
// at the flush: http.ResponseController.Flush calls this); Flush is it for code
// that asks for an http.Flusher; Unwrap lets http.ResponseController reach the
// connection's own write deadline.
func (b *boundedWriter) FlushError() error {
	b.d.before(b.rc)
	return b.rc.Flush()
}

func (b *boundedWriter) Flush() { _ = b.FlushError() }

func (b *boundedWriter) Unwrap() http.ResponseWriter { return b.ResponseWriter }

// answerChunk is how much of a whole answer is written at once: the write
// deadline moves on between chunks, so a reader that takes a chunk in each
// stream_idle_timeout (32 KiB a minute by default) keeps reading.
const answerChunk = 32 << 10

// writeAnswer writes a whole (non-stream) answer with its Content-Length, in
// chunks, each under the write bound (boundedWriter): a client that stops reading
// is dropped, not left holding the handler and the answer (an embeddings answer
// of megabytes) for as long as it keeps the connection open.
func writeAnswer(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	for len(body) > 0 {
		n := min(len(body), answerChunk)
		if _, err := w.Write(body[:n]); err != nil {
			return
		}
		body = body[n:]
	}
}
