package sse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/switchyard/switchyard/providers"
)

// ErrIdle is the cause of a stream's context ended by its idle timer.
var ErrIdle = errors.New("stream idle timeout")

// MaxHeld bounds the events without content a provider holds before the first
// one with content; past it the stream begins anyway (the first-token deadline
// still bounds the wait, this bounds the memory).
const MaxHeld = 64

// Deadline is a stream's first-token deadline: it cancels the attempt's context
// with providers.ErrFirstToken when no content arrived within its duration.
type Deadline struct{ t *time.Timer }

// StartDeadline starts the deadline before the request is sent (headers and
// events without content count against it); d 0 is no deadline.
func StartDeadline(d time.Duration, cancel context.CancelCauseFunc) Deadline {
	if d <= 0 {
		return Deadline{}
	}
	return Deadline{t: time.AfterFunc(d, func() { cancel(providers.ErrFirstToken) })}
}

// Stop stops the deadline and reports whether it had not fired: false means the
// first content and the deadline crossed, and the context is cancelled.
func (d Deadline) Stop() bool { return d.t == nil || d.t.Stop() }

// Conn is an open event stream (a 2xx answer's body) and the context its
// request runs in, whose cancel cause says why it ended.
type Conn struct {
	// Provider names the provider in the stream's errors.
	Provider string
	// Secrets are redacted from the reasons of the stream's errors.
	Secrets providers.Secrets
	// Events reads the body.
	Events Reader

	ctx    context.Context
	cancel context.CancelCauseFunc
	body   io.Closer
	idle   time.Duration
	timer  *time.Timer
	done   bool
	once   sync.Once
}

// NewConn reads body through a pooled buffer. cancel must cancel ctx, the
// request's context; Close calls it.
func NewConn(ctx context.Context, cancel context.CancelCauseFunc, body io.ReadCloser) *Conn {
	return &Conn{ctx: ctx, cancel: cancel, body: body, Events: NewReader(body)}
}

// NewConnReader is NewConn reading through events (tests use it to choose the
// buffer).
func NewConnReader(ctx context.Context, cancel context.CancelCauseFunc, body io.Closer, events Reader) *Conn {
	return &Conn{ctx: ctx, cancel: cancel, body: body, Events: events}
}

// Context is the stream's request context.
func (c *Conn) Context() context.Context { return c.ctx }

// StartIdle arms the idle timer once the stream is handed on: from then on each
// read that waits longer than d ends the stream as stalled. d 0 is no limit.
func (c *Conn) StartIdle(d time.Duration) {
	if d <= 0 {
		return
	}
	c.idle = d
	c.timer = time.AfterFunc(time.Hour, func() { c.cancel(ErrIdle) })
	c.timer.Stop()
}

// First reads an event before the first content, when failures are plain errors
// with a status (no byte has reached the client, so the attempt can be retried):
// the context's end (a first-token timeout, the caller leaving) is transport's
// verdict on it, an oversized event is unreadable, the end of the body an empty
// stream, anything else a transport failure.
func (c *Conn) First(timeouts providers.Timeouts) (providers.Event, error) {
	ev, err := c.Events.Next()
	if err == nil {
		return ev, nil
	}
	switch {
	case c.ctx.Err() != nil:
		err = providers.TransportError(c.ctx, c.Provider, timeouts, err)
	case errors.Is(err, ErrEventTooLarge):
		err = providers.Unreadable(c.Provider, "sent an unreadable stream event", err)
	case errors.Is(err, io.EOF):
		err = Empty(c.Provider)
	default:
		err = providers.TransportError(c.ctx, c.Provider, timeouts, err)
	}
	if pe, ok := err.(*providers.Error); ok {
		c.Secrets.Redact(pe)
	}
	return providers.Event{}, err
}

// Crossed is the error of a stream whose first content arrived as its first-token
// deadline fired (Deadline.Stop reported false).
func (c *Conn) Crossed(timeouts providers.Timeouts) error {
	return providers.TransportError(c.ctx, c.Provider, timeouts, context.Cause(c.ctx))
}

// Next reads the next event once the stream was handed on. finished says whether
// the stream already holds what makes it complete: any stop is then a clean end
// (io.EOF), the body's end as a cut or a stall after it (SPEC: a stream that sent
// its final event stays complete even if the connection fails afterwards).
// Otherwise a stop is a *providers.StreamError: a stall past the idle timer, a
// cut, an oversized event, a read failure. The caller's context ending is its
// error as is, finished or not. The stream is closed on every error.
func (c *Conn) Next(finished bool) (providers.Event, error) {
	if c.done {
		return providers.Event{}, io.EOF
	}
	if c.timer != nil {
		c.timer.Reset(c.idle)
	}
	ev, err := c.Events.Next()
	if c.timer != nil {
		c.timer.Stop()
	}
	if err == nil {
		return ev, nil
	}
	idle := errors.Is(context.Cause(c.ctx), ErrIdle)
	if ctxErr := c.ctx.Err(); ctxErr != nil && !idle {
		c.End()
		return ev, ctxErr
	}
	if finished {
		// The answer is whole: what fails after it (a cut or a stall before
		// [DONE] or the usage chunk, a read error) does not unmake it.
		c.End()
		return ev, io.EOF
	}
	if idle {
		return ev, c.Incomplete(providers.StreamStalled, fmt.Sprintf("no data from the provider for %s", c.idle))
	}
	if errors.Is(err, ErrEventTooLarge) {
		return ev, c.Incomplete(providers.StreamMalformedChunk, fmt.Sprintf("the provider sent an unreadable chunk: %v", err))
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return ev, c.Incomplete(providers.StreamClosedEarly, "the connection closed before the final event")
	}
	return ev, c.Incomplete(providers.StreamReadError, fmt.Sprintf("reading the stream failed: %v", providers.RootCause(err)))
}

// Incomplete ends the stream: the error of a stream that stopped before its final
// event, with reason redacted.
func (c *Conn) Incomplete(kind, reason string) error {
	c.End()
	return &providers.StreamError{Provider: c.Provider, Kind: kind, Reason: c.Secrets.String(reason)}
}

// End marks the stream done (further reads give io.EOF) and closes it.
func (c *Conn) End() {
	c.done = true
	c.Close()
}

// Done reports whether the stream has ended.
func (c *Conn) Done() bool { return c.done }

// Pending reports whether the next read can return without waiting for the upstream.
func (c *Conn) Pending() bool { return !c.done && c.Events.Pending() }

// Close releases the upstream connection and the read buffer; safe to call more
// than once.
func (c *Conn) Close() error {
	c.once.Do(func() {
		if c.timer != nil {
			c.timer.Stop()
		}
		c.cancel(nil)
		c.body.Close()
		c.Events.Release()
	})
	return nil
}

// Empty is the error of a stream that ended with nothing but events without
// content: the provider's fault (502), before any byte reached the client.
func Empty(provider string) *providers.Error {
	return &providers.Error{Provider: provider, Status: http.StatusBadGateway, Err: providers.ErrEmptyResponse,
		Message: "provider returned an empty stream", Code: "empty_response", Kind: providers.KindEmptyStream}
}
