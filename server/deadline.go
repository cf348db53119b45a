package server

import (
	"net/http"
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
