package router

import (
	"context"
	"errors"
	"fmt"
	"time"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/resilience"
)

// ErrTargetSaturated marks a target at its own limits (the provider account's
// rpm, tpm or concurrency): the router skips it like an open breaker, without an
// upstream call, and a request whose every target is saturated gets a 429.
var ErrTargetSaturated = errors.New("target_saturated")

// SaturatedError is a target refused by its limiter.
type SaturatedError struct {
	// Provider and Model name the target.
	Provider, Model string
	// Limit names the limit reached ("requests", "tokens", "concurrency").
	Limit string
	// RetryAfter is when the limit will next admit a call (0: unknown).
	RetryAfter time.Duration
}

func (e *SaturatedError) Error() string {
	return fmt.Sprintf("provider %s is at its %s limit for model %s", e.Provider, e.Limit, e.Model)
}

// Is matches ErrTargetSaturated.
func (e *SaturatedError) Is(target error) bool { return target == ErrTargetSaturated }

// TargetLimiter is a provider account's own limits (rpm, tpm, concurrency).
type TargetLimiter interface {
	// Admit reserves room for one call to model with an estimated token cost; a
	// target at its limit returns an error wrapping ErrTargetSaturated. done is
	// called once when the call ends, with the tokens it really used (0 if
	// unknown: the estimate stands).
	Admit(ctx context.Context, model string, estTokens int) (done func(usedTokens int), err error)
}

// admit asks t's limiter, if any, for room for one call; the returned done is
// never nil.
func admit(ctx context.Context, t Target, a providers.Attempt, call Call) (func(int), error) {
	if t.Limiter == nil {
		return func(int) {}, nil
	}
	return t.Limiter.Admit(ctx, a.Model, call.EstTokens)
}

// notCalled reports errors that mean a target was not called at all: an open
// breaker, no breaker slot, the target's own limits, or an endpoint kind its
// provider does not serve.
func notCalled(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrTargetSaturated) || errors.Is(err, resilience.ErrBreakerOpen) ||
		errors.Is(err, resilience.ErrNoBreakerSlot) {
		return true
	}
	var pe *providers.Error
	return errors.As(err, &pe) && pe.Code == providers.CodeUnsupportedEndpoint
}

// usedTokens is what an answer says it used, when it says (a chat completion).
func usedTokens(answer any) int {
	if c, ok := answer.(*pb.ChatCompletion); ok {
		return int(c.GetUsage().GetTotalTokens())
	}
	return 0
}
