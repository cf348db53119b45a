package limits

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Clock tells the time (resilience.SystemClock is the real one).
type Clock interface{ Now() time.Time }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// Limiter checks calls against a Backend on its clock.
type Limiter struct {
	backend Backend
	clock   Clock
}

// New returns a Limiter on backend; a nil clock is the real one.
func New(backend Backend, clock Clock) *Limiter {
	if clock == nil {
		clock = systemClock{}
	}
	return &Limiter{backend: backend, clock: clock}
}

// Grant is an admitted call. Done must be called once when the call ends.
type Grant struct {
	// Requests and Tokens are the rate limits' states after the admission (for
	// the x-ratelimit-* headers); Limit 0 means that limit is not set.
	Requests, Tokens Status

	once    sync.Once
	release func(used int, known, undo bool) error
}

// Done ends the call with the tokens it really used (0 if unknown: the estimate
// stands), freeing its concurrency slot. Calls after the first do nothing. The
// error is the backend's (the call is over either way).
func (g *Grant) Done(used int) error { return g.end(used, false, false) }

// DoneUnbilled ends a call that ran but used no tokens (refused before any
// upstream, or answered an error: upstreams bill neither): its request stays
// counted, its estimated tokens are given back.
func (g *Grant) DoneUnbilled() error { return g.end(0, true, false) }

// Undo ends a call that never ran: its slot, its request and its estimated
// tokens are given back. Calls after Done or Undo do nothing.
func (g *Grant) Undo() error { return g.end(0, true, true) }

// end releases the grant once: used tokens (known: even when 0, else 0 is
// "unknown" and the estimate stands), and undo gives the request back too.
func (g *Grant) end(used int, known, undo bool) error {
	if g == nil || g.release == nil {
		return nil
	}
	var err error
	g.once.Do(func() { err = g.release(used, known, undo) })
	return err
}

// Admit checks one call of subject, with an estimated token cost, against lim. A
// call over a limit gets an *ExceededError; a backend that cannot decide, its
// error. Limits that limit nothing need no backend round trip.
func (l *Limiter) Admit(ctx context.Context, subject string, lim Limits, estTokens int) (*Grant, error) {
	if lim.IsZero() {
		return &Grant{}, nil
	}
	estTokens = max(estTokens, 0)
	if lim.TPM > 0 {
		estTokens = min(estTokens, lim.TPM) // what is charged (see the package doc)
	}
	d, err := l.backend.Admit(ctx, Request{Subject: subject, Limits: lim, Tokens: estTokens, Now: l.clock.Now()})
	if err != nil {
		return nil, fmt.Errorf("limits backend: %w", err)
	}
	if !d.Allowed {
		e := &ExceededError{Subject: subject, Limit: d.Limit, RetryAfter: d.RetryAfter, Requests: d.Requests, Tokens: d.Tokens}
		switch d.Limit {
		case Requests:
			e.Configured = lim.RPM
		case Tokens:
			e.Configured = lim.TPM
		case Concurrency:
			e.Configured = lim.MaxConcurrency
		}
		return nil, e
	}
	// The release outlives the call's cancellation: a client leaving still frees its slot.
	bg := context.WithoutCancel(ctx)
	release := func(used int, known, undo bool) error {
		delta := 0
		if used > 0 || known {
			delta = used - estTokens
		}
		return l.backend.Release(bg, Release{Subject: subject, Limits: lim, Lease: d.Lease, TokenDelta: delta,
			Undo: undo, Now: l.clock.Now()})
	}
	return &Grant{Requests: d.Requests, Tokens: d.Tokens, release: release}, nil
}
