package limits

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Period is the span of rpm and tpm.
const Period = time.Minute

// Limits are one subject's limits; zero means unlimited.
type Limits struct {
	// RPM is requests per minute.
	RPM int `yaml:"rpm,omitempty" json:"rpm,omitempty"`
	// TPM is tokens (prompt + completion) per minute.
	TPM int `yaml:"tpm,omitempty" json:"tpm,omitempty"`
	// MaxConcurrency is calls in flight at once.
	MaxConcurrency int `yaml:"max_concurrency,omitempty" json:"max_concurrency,omitempty"`
}

// IsZero reports limits that limit nothing.
func (l Limits) IsZero() bool { return l.RPM <= 0 && l.TPM <= 0 && l.MaxConcurrency <= 0 }

// Validate reports negative limits.
func (l Limits) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    int
	}{{"rpm", l.RPM}, {"tpm", l.TPM}, {"max_concurrency", l.MaxConcurrency}} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative (0 = unlimited), got %d", f.name, f.v))
		}
	}
	return errors.Join(errs...)
}

// Names of the limits, as OpenAI names them in its 429 errors ("type") and headers.
const (
	Requests    = "requests"
	Tokens      = "tokens"
	Concurrency = "concurrency"
)

// Request is one admission check: everything a Backend needs, so that a shared
// backend can make the whole check in one round trip.
type Request struct {
	// Subject names whose limits these are ("key:<id>", "target:<provider>/<model>").
	Subject string
	// Limits in force for the subject (they may change between calls).
	Limits Limits
	// Tokens is the estimated token cost, charged to the tpm limit.
	Tokens int
	// Now is the limiter's clock. A shared backend may use its own clock instead
	// (one clock for every replica); it must then use it for Release too.
	Now time.Time
}

// Status is one rate limit's state after a check, for the x-ratelimit-* headers.
type Status struct {
	// Limit is the configured limit (0: this limit is not set).
	Limit int
	// Remaining is how many units could be spent at once right now.
	Remaining int
	// Reset is how long until the limit is fully replenished.
	Reset time.Duration
}

// Decision is a Backend's answer. When Allowed, every limit has been charged and a
// concurrency slot is held until Release; otherwise nothing has been charged.
type Decision struct {
	Allowed bool
	// Limit names the limit that refused (Requests, Tokens or Concurrency).
	Limit string
	// RetryAfter is when the refusing limit would admit the call (0: unknown,
	// e.g. concurrency, which frees when a call ends).
	RetryAfter time.Duration
	// Requests and Tokens are the rpm and tpm limits' states.
	Requests, Tokens Status
	// Lease is the backend's handle on the admitted call, passed back to Release
	// (a shared backend may expire leases of a replica that died).
	Lease string
}

// Release ends an admitted call.
type Release struct {
	Subject string
	Limits  Limits
	// Lease is Decision.Lease.
	Lease string
	// TokenDelta corrects the tpm charge: used − estimated tokens (negative gives
	// tokens back).
	TokenDelta int
	// Undo says the call never ran (a later check refused it): give back its
	// request too (TokenDelta gives back its tokens).
	Undo bool
	// Now is the limiter's clock.
	Now time.Time
}

// Backend holds limit state. Implementations must make Admit atomic: two
// concurrent Admits on one subject never both take the last unit.
type Backend interface {
	// Admit checks every limit of r.Subject and, only if all pass, charges one
	// request, r.Tokens tokens and one concurrency slot. An error means the
	// backend could not decide (an outage); what to do then is the backend's
	// policy to document (allow or deny) — a Backend that has one answers a
	// Decision instead.
	Admit(ctx context.Context, r Request) (Decision, error)
	// Release frees an admitted call's concurrency slot and applies its token
	// correction.
	Release(ctx context.Context, r Release) error
}

// ErrLimited marks a call refused by a limit.
var ErrLimited = errors.New("rate limit exceeded")

// ExceededError is a refused call. It matches ErrLimited.
type ExceededError struct {
	// Subject is the refused subject.
	Subject string
	// Limit names the limit: Requests, Tokens or Concurrency.
	Limit string
	// Configured is that limit's value.
	Configured int
	// RetryAfter is when trying again makes sense (0: unknown).
	RetryAfter time.Duration
	// Requests and Tokens are the rate limits' states, for the headers.
	Requests, Tokens Status
}

func (e *ExceededError) Error() string {
	switch e.Limit {
	case Concurrency:
		return fmt.Sprintf("Rate limit reached on concurrent requests: limit %d. Please try again when a request in flight ends.", e.Configured)
	case Tokens:
		return fmt.Sprintf("Rate limit reached on tokens per min (TPM): limit %d. Please try again in %s.", e.Configured, wait(e.RetryAfter))
	}
	return fmt.Sprintf("Rate limit reached on requests per min (RPM): limit %d. Please try again in %s.", e.Configured, wait(e.RetryAfter))
}

func wait(d time.Duration) string {
	if d < time.Millisecond {
		return "1ms"
	}
	return d.Round(time.Millisecond).String()
}

// Is matches ErrLimited.
func (e *ExceededError) Is(target error) bool { return target == ErrLimited }
