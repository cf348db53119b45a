package router

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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

// saturated keeps, of a walk's targets refused at their limits, the one that
// frees first.
type saturated struct {
	route Route
	err   *SaturatedError
}

func (s *saturated) keep(route Route, err error) {
	var sa *SaturatedError
	if errors.As(err, &sa) && (s.err == nil || sa.RetryAfter < s.err.RetryAfter) {
		s.route, s.err = route, sa
	}
}

// TargetLimiter is a provider account's own limits (rpm, tpm, concurrency).
type TargetLimiter interface {
	// Admit reserves room for one call to model with an estimated token cost; a
	// target at its limit returns an error wrapping ErrTargetSaturated. done is
	// called once when the call ends, with the tokens it really used (0 if
	// unknown: the estimate stands); its error (a backend that could not take the
	// room back) is logged, the call being over either way.
	Admit(ctx context.Context, model string, estTokens int) (done func(usedTokens int) error, err error)
}

// admit asks t's limiter, if any, for room for one call.
func (r *Router) admit(ctx context.Context, t Target, a providers.Attempt, call Call) (grant, error) {
	if t.Limiter == nil {
		return grant{}, nil
	}
	done, err := t.Limiter.Admit(ctx, a.Model, call.EstTokens)
	if err != nil {
		return grant{}, err
	}
	return grant{done: done, log: r.log, provider: t.Provider, model: a.Model, requestID: call.RequestID}, nil
}

// grant is the room a target's limiter gave one call (the zero grant: no
// limiter). A value, not a closure: admitting allocates nothing of its own.
type grant struct {
	done      func(int) error
	log       *slog.Logger
	provider  providers.Provider
	model     string
	requestID string
}

// end gives the room back with the tokens the call used (0: the estimate
// stands), logging a release that failed.
func (g grant) end(used int) {
	if g.done == nil {
		return
	}
	if err := g.done(used); err != nil {
		g.log.Warn("target limit release failed", "provider", g.provider.Name(), "model", g.model,
			"error", err.Error(), "request_id", g.requestID)
	}
}

// endOnPanic is deferred by an attempt: a panic (a provider's bug) gives the
// room back too, then goes on to the request's recovery.
func (g grant) endOnPanic() {
	if p := recover(); p != nil {
		g.end(0)
		panic(p)
	}
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

// answerUsage is what an answer says it used, when it says: as the endpoint
// reads it (AnswerUsage), or a chat completion's usage.
func (c Call) answerUsage(answer any) (Usage, bool) {
	if c.AnswerUsage != nil {
		return c.AnswerUsage(answer)
	}
	if c, ok := answer.(*pb.ChatCompletion); ok && c.GetUsage() != nil {
		return Usage{Prompt: int64(c.GetUsage().GetPromptTokens()), Completion: int64(c.GetUsage().GetCompletionTokens())}, true
	}
	return Usage{}, false
}

// usedTokens is what an answer says it used in all (0: it does not say): a
// chat completion's total_tokens as it gives it.
func (c Call) usedTokens(answer any) int {
	if cc, ok := answer.(*pb.ChatCompletion); ok && c.AnswerUsage == nil {
		return int(cc.GetUsage().GetTotalTokens())
	}
	u, _ := c.answerUsage(answer)
	return int(u.Prompt + u.Completion)
}
