package limits

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/router"
)

// A model its upstream said was spent is skipped until the upstream's reset,
// then the target's own limits decide again; other models are untouched.
func TestQuotaSkipsASpentModelUntilItsReset(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	q := NewQuota("up", nil, func() time.Time { return now })
	q.Note("gpt-4o", "tokens", now.Add(30*time.Second))

	_, err := q.Admit(context.Background(), "gpt-4o", 10)
	var se *router.SaturatedError
	require.True(t, errors.As(err, &se), "%v", err)
	require.Equal(t, "tokens", se.Limit)
	require.Equal(t, 30*time.Second, se.RetryAfter)

	done, err := q.Admit(context.Background(), "gpt-4o-mini", 10)
	require.NoError(t, err, "another model has its own room")
	done(0)

	now = now.Add(30 * time.Second)
	_, err = q.Admit(context.Background(), "gpt-4o", 10)
	require.NoError(t, err, "past the reset")
}

// An earlier reset never shortens a later one the upstream already gave.
func TestQuotaKeepsTheLaterReset(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	q := NewQuota("up", nil, func() time.Time { return now })
	q.Note("m", "requests", now.Add(time.Minute))
	q.Note("m", "tokens", now.Add(time.Second))
	_, err := q.Admit(context.Background(), "m", 1)
	var se *router.SaturatedError
	require.True(t, errors.As(err, &se))
	require.Equal(t, time.Minute, se.RetryAfter)
}
