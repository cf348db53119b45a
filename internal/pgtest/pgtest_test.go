package pgtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/pgtest"
)

func ping(dsn string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var one int
	return conn.QueryRow(ctx, "SELECT 1").Scan(&one)
}

// TestServerAnswersStopsPausesAndComesBack: a real server answers, refuses when
// stopped, comes back on its port with its data, and stalls (no answer, no error
// before the deadline) while paused.
func TestServerAnswersStopsPausesAndComesBack(t *testing.T) {
	s := pgtest.New(t)
	require.NoError(t, ping(s.DSN(), 5*time.Second))
	s.Stop()
	require.Error(t, ping(s.DSN(), 2*time.Second))
	s.Start()
	require.NoError(t, ping(s.DSN(), 5*time.Second))
	s.Pause()
	start := time.Now()
	err := ping(s.DSN(), 300*time.Millisecond)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.GreaterOrEqual(t, time.Since(start), 250*time.Millisecond, "a stalled server hangs, it does not refuse")
	s.Resume()
	require.NoError(t, ping(s.DSN(), 5*time.Second))
}
