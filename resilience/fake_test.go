package resilience

import (
	"context"
	"sync"
	"time"
)

// fakeClock only moves when told to; Sleep advances it at once and records the wait.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

// newFakeClock starts at the real time, so that real context deadlines line up with it.
func newFakeClock() *fakeClock { return &fakeClock{now: time.Now()} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return nil
}

func (c *fakeClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// upstreamErr is a test Outcome.
type upstreamErr struct {
	status     int
	transport  bool
	timeout    bool
	retryAfter time.Duration
}

func (e upstreamErr) Error() string             { return "upstream error" }
func (e upstreamErr) UpstreamStatus() int       { return e.status }
func (e upstreamErr) TransportFailure() bool    { return e.transport }
func (e upstreamErr) LocalTimeout() bool        { return e.timeout }
func (e upstreamErr) RetryDelay() time.Duration { return e.retryAfter }

func status(code int) error { return upstreamErr{status: code} }

// script returns a call that answers errs in order (nil = success) and counts calls.
func script(errs ...error) (func(context.Context, int) error, *int) {
	n := 0
	return func(context.Context, int) error {
		i := n
		n++
		if i < len(errs) {
			return errs[i]
		}
		return nil
	}, &n
}
