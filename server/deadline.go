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

// answerChunk is how much of a whole answer is written under one deadline: a
// reader that takes one chunk in each stream_idle_timeout (32 KiB a minute by
// default) keeps reading.
const answerChunk = 32 << 10

// boundedAnswer is the size from which a whole answer is written under a
// deadline: a smaller one goes into the socket's buffers without waiting on the
// client, and setting a deadline costs a timer (see writeDeadline) that most
// answers, of a few kilobytes, do not need.
const boundedAnswer = 32 << 10

// writeAnswer writes a whole (non-stream) answer with its Content-Length. One of
// boundedAnswer or more is written under the deadline a stream's writes have
// (timeout 0: none), moved on as the client reads: a client that stops reading is
// dropped when it runs out, not left holding the handler and the answer (an
// embeddings answer of megabytes) for as long as it keeps the connection open. A
// slow reader that keeps reading is not.
func writeAnswer(w http.ResponseWriter, timeout time.Duration, body []byte) {
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	if len(body) < boundedAnswer || timeout <= 0 {
		_, _ = w.Write(body)
		return
	}
	rc := http.NewResponseController(w)
	d := writeDeadline{timeout: timeout}
	for len(body) > 0 {
		n := min(len(body), answerChunk)
		d.before(rc)
		if _, err := w.Write(body[:n]); err != nil {
			return
		}
		body = body[n:]
	}
}
