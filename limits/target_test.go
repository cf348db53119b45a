package limits

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/router"
)

func TestTargetLimiter(t *testing.T) {
	t.Parallel()
	require.Nil(t, NewTarget(New(NewMemory(), nil), "up", Limits{}, map[string]Limits{"m": {}}), "nothing limited: no limiter")

	t.Run("account limits are shared by the models", func(t *testing.T) {
		t.Parallel()
		tl := NewTarget(New(NewMemory(), newClock()), "up", Limits{RPM: 2}, nil)
		for _, m := range []string{"a", "b"} {
			done, err := tl.Admit(context.Background(), m, 0)
			require.NoError(t, err)
			done(0)
		}
		_, err := tl.Admit(context.Background(), "c", 0)
		require.ErrorIs(t, err, router.ErrTargetSaturated)
		var se *router.SaturatedError
		require.ErrorAs(t, err, &se)
		require.Equal(t, router.SaturatedError{Provider: "up", Model: "c", Limit: Requests, RetryAfter: se.RetryAfter}, *se)
		require.Positive(t, se.RetryAfter)
	})
	t.Run("a model's limit refusing gives the account its room back", func(t *testing.T) {
		t.Parallel()
		tl := NewTarget(New(NewMemory(), newClock()), "up", Limits{RPM: 2}, map[string]Limits{"small": {MaxConcurrency: 1}})
		done, err := tl.Admit(context.Background(), "small", 0)
		require.NoError(t, err)
		for range 3 {
			_, err = tl.Admit(context.Background(), "small", 0)
			var se *router.SaturatedError
			require.ErrorAs(t, err, &se)
			require.Equal(t, Concurrency, se.Limit)
		}
		_, err = tl.Admit(context.Background(), "big", 0)
		require.NoError(t, err, "the refused calls took none of the account's rpm")
		done(0)
	})
	t.Run("done releases both", func(t *testing.T) {
		t.Parallel()
		tl := NewTarget(New(NewMemory(), newClock()), "up", Limits{MaxConcurrency: 1}, map[string]Limits{"m": {MaxConcurrency: 1}})
		done, err := tl.Admit(context.Background(), "m", 10)
		require.NoError(t, err)
		_, err = tl.Admit(context.Background(), "m", 10)
		require.ErrorIs(t, err, router.ErrTargetSaturated)
		done(20)
		done2, err := tl.Admit(context.Background(), "m", 10)
		require.NoError(t, err)
		done2(0)
	})
}
