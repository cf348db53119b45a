package resilience

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrRetriesExhausted marks an error returned after every allowed retry was spent
// (or the sequence gave up early); clients should not retry it themselves.
var ErrRetriesExhausted = errors.New("retries exhausted")

// SequenceError is the last attempt's error after a retry sequence that made more
// than one attempt (or a failover chain that was walked). It unwraps to that error
// and matches ErrRetriesExhausted. A sequence that made one attempt and could not
// retry (Retry-After beyond max_backoff or the caller's deadline, no budget) is
// not one: nothing was spent, so the client may retry, after the upstream's
// Retry-After.
type SequenceError struct {
	// Attempts is how many tries were made: upstream attempts for one target's retry
	// sequence, targets tried for a failover chain (the router's walk).
	Attempts int
	// Err is the last try's error.
	Err error
}

func (e *SequenceError) Error() string { return e.Err.Error() }

func (e *SequenceError) Unwrap() error { return e.Err }

// Is matches ErrRetriesExhausted.
func (e *SequenceError) Is(target error) bool { return target == ErrRetriesExhausted }

// Backoff is the wait before retry n (0-based): min(max, initial × factor^n), plus a
// random jitter of up to JitterFactor of it, still capped at MaxBackoff. r is a
// random number in [0, 1). It saturates instead of overflowing: factor^n may grow to
// +Inf after many retries, and a MaxBackoff near the largest Duration does not
// survive a round trip through float64; the result is always in [0, MaxBackoff].
func (s RetrySettings) Backoff(n int, r float64) time.Duration {
	if s.MaxBackoff <= 0 {
		return 0
	}
	limit := float64(s.MaxBackoff) // may round up past MaxBackoff: compare, never convert back
	d := float64(s.InitialBackoff) * math.Pow(s.BackoffFactor, float64(n))
	if d = min(d, limit); d > 0 {
		d += d * s.JitterFactor * r
	}
	switch {
	case math.IsNaN(d) || d <= 0: // 0 × Inf, a negative factor or jitter
		return 0
	case d >= limit:
		return s.MaxBackoff
	}
	return time.Duration(d)
}

// InterruptedError is returned when the caller's context ended a retry sequence
// between attempts: during a backoff wait, or when an attempt failed after the
// context was already done. The client gave up (cancellation) or its own deadline
// passed, so it is neither a spent sequence nor an upstream failure (SPEC §3, §4): it
// unwraps only to the context's error (context.Canceled or
// context.DeadlineExceeded), never to the upstream's, so it does not match
// ErrRetriesExhausted and the breaker records nothing. This holds for the deadline
// too, as it does when the deadline interrupts an attempt itself. (A wait that would
// outlive the deadline is known before it starts: the sequence then ends at once
// with the upstream's error, like one whose Retry-After exceeds max_backoff.)
type InterruptedError struct {
	// Attempts is how many upstream attempts were made.
	Attempts int
	// Err is the context's error.
	Err error
	// Last is the last attempt's error, for logs; it is not unwrapped.
	Last error
}

func (e *InterruptedError) Error() string {
	return fmt.Sprintf("retry sequence interrupted after %d attempt(s): %v (last upstream error: %v)", e.Attempts, e.Err, e.Last)
}

// Unwrap returns the context's error.
func (e *InterruptedError) Unwrap() error { return e.Err }

// retryable reports whether an attempt's error may be retried.
func (s RetrySettings) retryable(k kind, o Outcome) bool {
	switch k {
	case kindTransport:
		return true
	case kindTimeout:
		f, ok := o.(FirstTokenOutcome)
		return ok && f.FirstTokenTimeout()
	case kindStatus:
		return s.RetryOnStatuses.Has(o.UpstreamStatus())
	}
	return false
}

// retryAfterStatuses are the statuses whose Retry-After is honoured.
func honoursRetryAfter(status int) bool { return status == 429 || status == 503 }

// attemptFunc makes one upstream attempt.
type attemptFunc func(ctx context.Context, attempt int) error

// runRetries runs call until it succeeds, fails in a way that is not retried, the
// retries are spent, the budget denies one, or the caller's deadline would pass
// during the next wait. It returns the attempts made and the last error, wrapped in
// a *SequenceError when that error was retryable and retries were spent on it, or
// an *InterruptedError when the caller's context ended it between attempts.
func runRetries(ctx context.Context, s RetrySettings, maxRetries int, clock Clock, rnd func() float64,
	budget *Budget, call attemptFunc) (int, error) {
	attempts, err := retryLoop(ctx, s, maxRetries, clock, rnd, budget, call)
	if err != nil {
		if k, o := classify(err); s.retryable(k, o) && attempts > 1 {
			return attempts, &SequenceError{Attempts: attempts, Err: err}
		}
	}
	return attempts, err
}

func retryLoop(ctx context.Context, s RetrySettings, maxRetries int, clock Clock, rnd func() float64,
	budget *Budget, call attemptFunc) (int, error) {
	attempts, held := 0, false
	defer func() {
		if held {
			budget.release()
		}
	}()
	for {
		err := call(ctx, attempts)
		attempts++
		if held {
			budget.release() // the retry is over
			held = false
		}
		if err == nil {
			return attempts, nil
		}
		k, o := classify(err)
		if !s.retryable(k, o) || attempts > maxRetries {
			return attempts, err
		}
		if ctx.Err() != nil {
			return attempts, &InterruptedError{Attempts: attempts, Err: ctx.Err(), Last: err}
		}
		wait := s.Backoff(attempts-1, rnd())
		if o != nil && honoursRetryAfter(o.UpstreamStatus()) {
			if ra := o.RetryDelay(); ra > 0 {
				if ra > s.MaxBackoff {
					return attempts, err // the upstream asks for longer than we may hold the request
				}
				wait = max(wait, ra)
			}
		}
		if dl, ok := ctx.Deadline(); ok && clock.Now().Add(wait).After(dl) {
			return attempts, err // the wait would outlive the caller's deadline
		}
		if !budget.acquire() {
			return attempts, err
		}
		held = true
		if serr := clock.Sleep(ctx, wait); serr != nil {
			if cerr := ctx.Err(); cerr != nil {
				serr = cerr
			}
			return attempts, &InterruptedError{Attempts: attempts, Err: serr, Last: err}
		}
	}
}
