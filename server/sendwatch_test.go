package server

import (
	"testing"
	"time"
)

// A watch releases only when the Send under way began limit ago or more; between
// Sends it looks again a whole limit later, during one when the limit would run out.
func TestSendWatchVerdict(t *testing.T) {
	const limit = 300 * time.Millisecond
	cases := []struct {
		name        string
		sendingAt   time.Duration // -1: no Send under way
		now         time.Duration
		release     bool
		lookAgainIn time.Duration
	}{
		{"no send under way", -1, 10 * time.Second, false, limit},
		{"a send just begun", 1 * time.Second, 1 * time.Second, false, limit},
		{"a send blocked for less than the limit", 1 * time.Second, 1100 * time.Millisecond, false, 200 * time.Millisecond},
		{"a send blocked for the limit", 1 * time.Second, 1300 * time.Millisecond, true, 0},
		{"a send blocked past the limit", 0, 5 * time.Second, true, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := &sendWatch{limit: limit}
			if c.sendingAt >= 0 {
				w.since.Store(int64(c.sendingAt) + 1)
			}
			release, next := w.verdict(c.now)
			if release != c.release || next != c.lookAgainIn {
				t.Fatalf("verdict(%v) = %v %v, want %v %v", c.now, release, next, c.release, c.lookAgainIn)
			}
		})
	}
}

// A Send that ended clears the watch; a stopped watch never releases.
func TestSendWatchSentAndStopped(t *testing.T) {
	released := make(chan struct{}, 1)
	w := watchSends(time.Millisecond, func() { released <- struct{}{} })
	w.sending()
	w.sent()
	if release, _ := w.verdict(time.Hour); release {
		t.Fatal("a Send that ended still counts as blocked")
	}
	w.sending()
	w.stop()
	w.fire() // as a firing under way when stop ran
	select {
	case <-released:
		t.Fatal("a stopped watch released its stream")
	default:
	}
}
