package server

import (
	"sync/atomic"
	"time"
)

// sendWatch releases a gRPC stream's upstream once one Send to the client has
// been blocked for limit: a client that stops reading fills its flow-control
// window, and its upstream must not stay pinned. One timer per stream, re-armed
// only when it fires: a stream sends a chunk every few microseconds, and arming
// and stopping a timer around each Send was ~1.5 % of a short gRPC stream's CPU.
type sendWatch struct {
	limit   time.Duration
	start   time.Time    // the watch's own epoch, for monotonic offsets
	since   atomic.Int64 // when the Send under way began (ns after start, +1); 0 between Sends
	done    atomic.Bool
	timer   *time.Timer
	release func()
}

// watchSends starts a watch whose limit is limit; stop ends it.
func watchSends(limit time.Duration, release func()) *sendWatch {
	w := &sendWatch{limit: limit, start: time.Now(), release: release}
	w.timer = time.AfterFunc(limit, w.fire)
	return w
}

// sending notes a Send begun; sent, its end.
func (w *sendWatch) sending() { w.since.Store(int64(time.Since(w.start)) + 1) }
func (w *sendWatch) sent()    { w.since.Store(0) }

// stop ends the watch; a firing under way re-arms at most once more, then sees done.
func (w *sendWatch) stop() {
	w.done.Store(true)
	w.timer.Stop()
}

func (w *sendWatch) fire() {
	if w.done.Load() {
		return
	}
	release, next := w.verdict(time.Since(w.start))
	if release {
		w.release()
		return
	}
	w.timer.Reset(next)
}

// verdict is what the watch does when its timer fires at now (after start):
// release, or wait next before looking again (a whole limit between Sends, the
// rest of it during one).
func (w *sendWatch) verdict(now time.Duration) (release bool, next time.Duration) {
	since := w.since.Load()
	if since == 0 {
		return false, w.limit
	}
	blocked := now - time.Duration(since-1)
	if blocked >= w.limit {
		return true, 0
	}
	return false, w.limit - blocked
}
