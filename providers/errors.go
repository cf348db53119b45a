package providers

import (
	"errors"
	"fmt"
	"time"
)

// ErrStreamIncomplete marks a stream that stopped before its final event.
var ErrStreamIncomplete = errors.New("stream_incomplete")

// ErrEmptyResponse marks a 200 that carried nothing usable (no choices, no events).
var ErrEmptyResponse = errors.New("empty response")

// Error is an upstream failure: an error status (possibly hidden in a 200), an
// unreadable answer, or no answer at all (Transport).
type Error struct {
	// Provider is the configured provider name.
	Provider string
	// Status is the HTTP status the client should see (the upstream's own status,
	// 502 for unreadable answers, transport failures and an upstream's 401/403,
	// 504 for timeouts).
	Status int
	// Answered is the status the upstream answered when the client is shown
	// another one (an upstream 401 is shown as 502); 0 when it is Status.
	Answered int
	// Message, Type, Code and Param come from the upstream's error body when it has one.
	Message, Type, Code, Param string
	// RetryAfter is the wait the upstream asked for (Retry-After, retry-after-ms).
	RetryAfter time.Duration
	// Transport is set when no answer arrived (refused, reset, DNS).
	Transport bool
	// Timeout is set when a local timeout ended the attempt.
	Timeout bool
	// FirstToken is set with Timeout when the timeout was the stream's first-token
	// deadline (resilience.first_token_timeout): the upstream did not start its
	// answer in time, so the attempt is retried like a transport failure.
	FirstToken bool
	// Kind names a failure the status alone does not tell, for metrics and logs:
	// KindHiddenError, KindNoChoices, KindEmptyStream, KindUnreadable,
	// KindUpstreamAuth; empty otherwise.
	Kind string
	// Err is the underlying cause, if any.
	Err error
}

func (e *Error) Error() string {
	if e.Message != "" {
		return e.Message
	}
	if e.Err != nil {
		return fmt.Sprintf("provider %s: %v", e.Provider, e.Err)
	}
	return fmt.Sprintf("provider %s returned status %d", e.Provider, e.Status)
}

func (e *Error) Unwrap() error { return e.Err }

// UpstreamStatus is the status the upstream answered; 0 when none arrived. It is
// what retries and breakers judge: an upstream 401 shown to the client as 502 is
// still a 401 to them (not retried).
func (e *Error) UpstreamStatus() int {
	if e.Transport || e.Timeout {
		return 0
	}
	if e.Answered != 0 {
		return e.Answered
	}
	return e.Status
}

// TransportFailure reports that no answer arrived.
func (e *Error) TransportFailure() bool { return e.Transport }

// LocalTimeout reports that a local timeout ended the attempt.
func (e *Error) LocalTimeout() bool { return e.Timeout }

// FirstTokenTimeout reports that the first-token deadline ended the attempt.
func (e *Error) FirstTokenTimeout() bool { return e.Timeout && e.FirstToken }

// RetryDelay is the wait the upstream asked for.
func (e *Error) RetryDelay() time.Duration { return e.RetryAfter }

// OutOfService reports an upstream that refused Switchyard's own credentials or
// answered a status that is neither a success nor an error (a redirect): a
// breaker failure of that target (resilience.OutOfServiceOutcome).
func (e *Error) OutOfService() bool {
	return e.Kind == KindUpstreamAuth || e.Kind == KindUnexpectedStatus
}

// Kinds of failures hidden behind a success.
const (
	KindHiddenError = "hidden_error"
	KindNoChoices   = "no_choices"
	KindEmptyStream = "empty_stream"
	KindUnreadable  = "unreadable"
	// KindUpstreamAuth: the upstream refused Switchyard's own credentials (401/403).
	KindUpstreamAuth = "upstream_auth"
	// KindUnexpectedStatus: the upstream answered a status that is neither a
	// success nor an error (a redirect, 1xx, above 599).
	KindUnexpectedStatus = "unexpected_status"
)

// Kinds of incomplete streams.
const (
	StreamStalled        = "stalled"
	StreamClosedEarly    = "closed_early"
	StreamMalformedChunk = "malformed_chunk"
	StreamErrorEvent     = "error_event"
	StreamReadError      = "read_error"
	StreamNoFinishReason = "no_finish_reason"
)

// StreamError is a failure after a stream started; Err wraps ErrStreamIncomplete.
type StreamError struct {
	// Provider is the configured provider name.
	Provider string
	// Kind is one of the Stream* kinds.
	Kind string
	// Reason says why the stream is incomplete.
	Reason string
}

func (e *StreamError) Error() string {
	return fmt.Sprintf("stream from provider %s ended before its final event: %s", e.Provider, e.Reason)
}

// Is matches ErrStreamIncomplete.
func (e *StreamError) Is(target error) bool { return target == ErrStreamIncomplete }

// A StreamError is an upstream failure to the resilience layer (its Outcome): the
// stream reached the client only in part, so the target's breaker counts it. A
// stall is a local timeout; a cut, a broken or unreadable chunk, an error event
// or a missing finish_reason is an answer that never arrived whole.

// UpstreamStatus is 0: the stream's status was a 200.
func (e *StreamError) UpstreamStatus() int { return 0 }

// TransportFailure reports every break but a stall.
func (e *StreamError) TransportFailure() bool { return e.Kind != StreamStalled }

// LocalTimeout reports a stall past stream_idle_timeout.
func (e *StreamError) LocalTimeout() bool { return e.Kind == StreamStalled }

// RetryDelay is 0: nothing is retried after the first byte.
func (e *StreamError) RetryDelay() time.Duration { return 0 }
