package server

import (
	"context"
	"errors"
	"sync"
	"time"
)

// errDraining is the cause given to streams still open at the drain deadline.
var errDraining = errors.New("server is draining")

// drainer tracks open REST streams so that, at the drain deadline, each one ends
// with the in-band error instead of being cut.
type drainer struct {
	mu      sync.Mutex
	next    int
	cancels map[int]context.CancelCauseFunc
}

func newDrainer() *drainer { return &drainer{cancels: map[int]context.CancelCauseFunc{}} }

// track returns a context the drainer can end, and the func to call when done.
func (d *drainer) track(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	d.mu.Lock()
	id := d.next
	d.next++
	d.cancels[id] = cancel
	d.mu.Unlock()
	return ctx, func() {
		d.mu.Lock()
		delete(d.cancels, id)
		d.mu.Unlock()
		cancel(nil)
	}
}

// wait waits up to limit for tracked streams to finish writing.
func (d *drainer) wait(limit time.Duration) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		d.mu.Lock()
		n := len(d.cancels)
		d.mu.Unlock()
		if n == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cancelAll ends every tracked stream.
func (d *drainer) cancelAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, cancel := range d.cancels {
		cancel(errDraining)
	}
}
