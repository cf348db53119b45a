package server

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"
)

// errDraining is the cause given to calls still running at the drain deadline.
var errDraining = errors.New("server is draining")

// answerGrace is how long calls ended at the drain deadline get to write their
// answer (a 503, a gRPC status, a stream's in-band error) before connections close.
const answerGrace = time.Second

// codeShuttingDown is the OpenAI error code of a call ended by the drain deadline.
const codeShuttingDown = "shutting_down"

// shuttingDown is the answer of a call still running at the drain deadline: REST
// 503 with an OpenAI error body, gRPC Unavailable, logged as such (not as a client
// cancel). The client may retry it elsewhere.
func shuttingDown() error {
	return statusOf(apiError{httpStatus: http.StatusServiceUnavailable, errType: "server_error", code: codeShuttingDown,
		message: "Switchyard is shutting down and the request did not finish before the drain deadline; retry it"})
}

// drainer tracks every call in flight, on both surfaces, so that at the drain
// deadline each one is ended with an answer instead of being cut.
type drainer struct {
	mu      sync.Mutex
	next    int
	closed  bool
	cancels map[int]context.CancelCauseFunc
}

func newDrainer() *drainer { return &drainer{cancels: map[int]context.CancelCauseFunc{}} }

// track returns a context the drainer can end, and the func to call when done. A
// call that starts after cancelAll is ended at once.
func (d *drainer) track(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		cancel(errDraining)
		return ctx, func() {}
	}
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

// cancelAll ends every tracked call, and every call tracked after it.
func (d *drainer) cancelAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	for _, cancel := range d.cancels {
		cancel(errDraining)
	}
}

// drained reports whether the call's error comes from the drain deadline.
func drained(ctx context.Context, err error) bool {
	return err != nil && context.Cause(ctx) == errDraining
}
