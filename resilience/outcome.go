package resilience

import (
	"context"
	"errors"
	"time"
)

// Outcome is what the resilience layer needs to know about a failed upstream call.
// The provider layer's errors implement it; resilience never looks at HTTP itself.
type Outcome interface {
	error
	// UpstreamStatus is the status the upstream answered (or that an error hidden in
	// a 200 carried); 0 when no answer arrived.
	UpstreamStatus() int
	// TransportFailure reports that no answer arrived (refused, reset, DNS).
	TransportFailure() bool
	// LocalTimeout reports that a local client timeout ended the call.
	LocalTimeout() bool
	// RetryDelay is the wait the upstream asked for (Retry-After), 0 if none.
	RetryDelay() time.Duration
}

// FirstTokenOutcome is implemented by outcomes that can be a stream's first-token
// timeout. A local timeout that reports true here is retried like a transport
// failure (the upstream never started its answer, nothing reached the client);
// other local timeouts (a whole non-stream attempt) are not retried. Both count
// as breaker failures.
type FirstTokenOutcome interface {
	FirstTokenTimeout() bool
}

// OutOfServiceOutcome is implemented by outcomes that can say the target cannot
// serve anyone until an operator acts (the upstream refused Switchyard's own
// credentials). Such an answer is not retried (its status says so), but it is a
// breaker failure whatever failure_on_statuses says, so that a target with a
// revoked key is opened and routed around instead of being asked on every request.
type OutOfServiceOutcome interface {
	OutOfService() bool
}

// kind is how an error is classified.
type kind int

const (
	kindSuccess   kind = iota
	kindCancelled      // the caller gave up: counts as nothing
	kindTransport      // no answer
	kindTimeout        // local timeout
	kindStatus         // an error status
	kindOther          // anything else (never retried, never a breaker failure)
)

func classify(err error) (kind, Outcome) {
	if err == nil {
		return kindSuccess, nil
	}
	var o Outcome
	if errors.As(err, &o) {
		switch {
		case o.LocalTimeout():
			return kindTimeout, o
		case o.TransportFailure():
			return kindTransport, o
		case o.UpstreamStatus() > 0:
			return kindStatus, o
		}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return kindCancelled, nil
	}
	return kindOther, o
}
