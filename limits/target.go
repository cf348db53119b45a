package limits

import (
	"context"
	"errors"

	"github.com/switchyard/switchyard/router"
)

// Target is a provider account's own limits as a router.TargetLimiter: limits
// for the whole account (every model of the provider shares them) and limits per
// model. A call must pass both.
type Target struct {
	lim      *Limiter
	provider string
	account  Limits
	models   map[string]Limits
}

// NewTarget returns provider's limiter; account applies to all its calls, models
// to the calls of one model (the provider's own model name). Nil when nothing is
// limited, so that the router skips the check.
func NewTarget(lim *Limiter, provider string, account Limits, models map[string]Limits) *Target {
	set := map[string]Limits{}
	for m, l := range models {
		if !l.IsZero() {
			set[m] = l
		}
	}
	if account.IsZero() && len(set) == 0 {
		return nil
	}
	return &Target{lim: lim, provider: provider, account: account, models: set}
}

var _ router.TargetLimiter = (*Target)(nil)

// Admit implements router.TargetLimiter. Refusals are *router.SaturatedError
// wrapping the *ExceededError.
func (t *Target) Admit(ctx context.Context, model string, estTokens int) (func(int) error, error) {
	acct, err := t.lim.Admit(ctx, "target:"+t.provider, t.account, estTokens)
	if err != nil {
		return nil, t.saturated(model, err)
	}
	per, err := t.lim.Admit(ctx, "target:"+t.provider+"/"+model, t.models[model], estTokens)
	if err != nil {
		// The call never runs: the account gets its room back. A backend that
		// fails to take it retries on its own (or the lease expires); the
		// refusal is what the caller must hear.
		_ = acct.Undo()
		return nil, t.saturated(model, err)
	}
	return func(used int) error {
		return errors.Join(per.Done(used), acct.Done(used))
	}, nil
}

func (t *Target) saturated(model string, err error) error {
	var ex *ExceededError
	if !errors.As(err, &ex) {
		return err // a backend failure, not a saturated target
	}
	return &router.SaturatedError{Provider: t.provider, Model: model, Limit: ex.Limit, RetryAfter: ex.RetryAfter}
}
