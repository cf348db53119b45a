package limits

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/testutil"
)

// fakeClock is a clock tests move by hand.
type fakeClock = testutil.Clock

func newClock() *fakeClock { return testutil.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) }

// admitN admits up to n calls of subject, ending each at once, and returns how
// many passed.
func admitN(t *testing.T, l *Limiter, lim Limits, n, tokens int) int {
	t.Helper()
	ok := 0
	for range n {
		g, err := l.Admit(context.Background(), "s", lim, tokens)
		if err != nil {
			require.ErrorIs(t, err, ErrLimited)
			continue
		}
		ok++
		require.NoError(t, g.Done(0))
	}
	return ok
}

func TestRPMHasNoWindowEdgeBurst(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// wait before the second burst
		gap  time.Duration
		want int // admitted in the second burst
	}{
		// A fixed window would admit 10 more at the next minute's first second.
		{"one second later", time.Second, 0},
		{"at the old window's edge", 59 * time.Second, 9},
		{"a refill interval later", 6 * time.Second, 1},
		{"half a minute later", 30 * time.Second, 5},
		{"a full period later", time.Minute, 10},
		{"long after", time.Hour, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := newClock()
			l := New(NewMemory(), clk)
			lim := Limits{RPM: 10}
			clk.Advance(50 * time.Second) // the burst is at 00:50, the "window edge" at 01:00
			require.Equal(t, 10, admitN(t, l, lim, 20, 0))
			clk.Advance(tt.gap)
			require.Equal(t, tt.want, admitN(t, l, lim, 20, 0))
		})
	}
}

func TestNoSpanAdmitsMoreThanTheBurstPlusTheRefill(t *testing.T) {
	t.Parallel()
	// One call every 100ms for three minutes against rpm 60: in every 60s span the
	// admitted count is at most 60 (burst) + 60·s/T, and the long-run rate is 60/min.
	clk := newClock()
	l := New(NewMemory(), clk)
	var admitted []time.Time
	for range 1800 {
		if g, err := l.Admit(context.Background(), "s", Limits{RPM: 60}, 0); err == nil {
			admitted = append(admitted, clk.Now())
			_ = g.Done(0)
		}
		clk.Advance(100 * time.Millisecond)
	}
	for i, start := range admitted {
		n := 0
		for _, at := range admitted[i:] {
			if at.Sub(start) < time.Minute {
				n++
			}
		}
		require.LessOrEqual(t, n, 120, "60s from %s", start)
	}
	// 60 at once, then one per second for the remaining 179.9 s.
	require.InDelta(t, 60+179, len(admitted), 1)
}

func TestRefusalSaysWhenToRetry(t *testing.T) {
	t.Parallel()
	clk := newClock()
	l := New(NewMemory(), clk)
	lim := Limits{RPM: 2}
	require.Equal(t, 2, admitN(t, l, lim, 2, 0))
	_, err := l.Admit(context.Background(), "s", lim, 0)
	var ex *ExceededError
	require.ErrorAs(t, err, &ex)
	require.Equal(t, Requests, ex.Limit)
	require.Equal(t, 2, ex.Configured)
	require.Equal(t, 30*time.Second, ex.RetryAfter)
	require.Equal(t, Status{Limit: 2, Remaining: 0, Reset: time.Minute}, ex.Requests)
	clk.Advance(ex.RetryAfter - time.Millisecond)
	_, err = l.Admit(context.Background(), "s", lim, 0)
	require.ErrorIs(t, err, ErrLimited, "a millisecond early")
	clk.Advance(time.Millisecond)
	g, err := l.Admit(context.Background(), "s", lim, 0)
	require.NoError(t, err, "when it said")
	require.Equal(t, Status{Limit: 2, Remaining: 0, Reset: time.Minute}, g.Requests)
}

func TestGrantStatusCountsDown(t *testing.T) {
	t.Parallel()
	clk := newClock()
	l := New(NewMemory(), clk)
	lim := Limits{RPM: 3, TPM: 1000}
	for i, want := range []struct{ req, tok int }{{2, 900}, {1, 800}, {0, 700}} {
		g, err := l.Admit(context.Background(), "s", lim, 100)
		require.NoError(t, err, i)
		require.Equal(t, want.req, g.Requests.Remaining, i)
		require.Equal(t, want.tok, g.Tokens.Remaining, i)
		require.Equal(t, time.Duration(i+1)*20*time.Second, g.Requests.Reset, i)
		require.Equal(t, 3, g.Requests.Limit)
		require.Equal(t, 1000, g.Tokens.Limit)
	}
}

func TestTPM(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		run  func(t *testing.T, clk *fakeClock, l *Limiter)
	}{
		{"estimates are charged at admission", func(t *testing.T, clk *fakeClock, l *Limiter) {
			require.Equal(t, 4, admitN(t, l, Limits{TPM: 1000}, 10, 250))
		}},
		{"a lower real usage gives tokens back", func(t *testing.T, clk *fakeClock, l *Limiter) {
			lim := Limits{TPM: 1000}
			for range 4 {
				g, err := l.Admit(context.Background(), "s", lim, 250)
				require.NoError(t, err)
				require.NoError(t, g.Done(10))
			}
			// 40 tokens used of 1000: 96 more calls of 10 would fit, and the next
			// estimate of 250 passes at once.
			g, err := l.Admit(context.Background(), "s", lim, 250)
			require.NoError(t, err)
			require.Equal(t, 1000-40-250, g.Tokens.Remaining)
		}},
		{"a higher real usage is charged when the answer ends", func(t *testing.T, clk *fakeClock, l *Limiter) {
			lim := Limits{TPM: 1000}
			g, err := l.Admit(context.Background(), "s", lim, 100)
			require.NoError(t, err)
			require.NoError(t, g.Done(900))
			_, err = l.Admit(context.Background(), "s", lim, 200)
			var ex *ExceededError
			require.ErrorAs(t, err, &ex)
			require.Equal(t, Tokens, ex.Limit)
			require.Equal(t, 100, ex.Tokens.Remaining)
			require.Equal(t, 6*time.Second, ex.RetryAfter, "100 more tokens take 6s at 1000/min")
		}},
		{"unknown usage keeps the estimate", func(t *testing.T, clk *fakeClock, l *Limiter) {
			lim := Limits{TPM: 1000}
			g, err := l.Admit(context.Background(), "s", lim, 600)
			require.NoError(t, err)
			require.NoError(t, g.Done(0))
			_, err = l.Admit(context.Background(), "s", lim, 600)
			require.ErrorIs(t, err, ErrLimited)
		}},
		{"an estimate above the limit passes once the limit is full", func(t *testing.T, clk *fakeClock, l *Limiter) {
			lim := Limits{TPM: 1000}
			g, err := l.Admit(context.Background(), "s", lim, 5000)
			require.NoError(t, err)
			require.Equal(t, 0, g.Tokens.Remaining)
			require.NoError(t, g.Done(5000)) // the 4000 over the limit are charged now
			clk.Advance(time.Minute)
			_, err = l.Admit(context.Background(), "s", lim, 1)
			var ex *ExceededError
			require.ErrorAs(t, err, &ex)
			require.Equal(t, 3*time.Minute+60*time.Millisecond, ex.RetryAfter, "5000 tokens at 1000/min: five minutes from the first call, less the one passed and the period's room")
		}},
		{"done twice corrects once", func(t *testing.T, clk *fakeClock, l *Limiter) {
			lim := Limits{TPM: 1000}
			g, err := l.Admit(context.Background(), "s", lim, 500)
			require.NoError(t, err)
			require.NoError(t, g.Done(100))
			require.NoError(t, g.Done(100))
			g, err = l.Admit(context.Background(), "s", lim, 0)
			require.NoError(t, err)
			require.Equal(t, 900, g.Tokens.Remaining)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := newClock()
			tt.run(t, clk, New(NewMemory(), clk))
		})
	}
}

func TestRefusedCallChargesNothing(t *testing.T) {
	t.Parallel()
	clk := newClock()
	l := New(NewMemory(), clk)
	lim := Limits{RPM: 10, TPM: 100}
	// The tpm limit refuses: the rpm limit must not be charged for it.
	for range 5 {
		_, err := l.Admit(context.Background(), "s", lim, 1000)
		if err != nil {
			continue
		}
	}
	g, err := l.Admit(context.Background(), "s", Limits{RPM: 10}, 0)
	require.NoError(t, err)
	require.Equal(t, 8, g.Requests.Remaining, "one admitted call (the first, at the whole tpm) and this one")
}

func TestConcurrency(t *testing.T) {
	t.Parallel()
	clk := newClock()
	l := New(NewMemory(), clk)
	lim := Limits{MaxConcurrency: 2}
	a, err := l.Admit(context.Background(), "s", lim, 0)
	require.NoError(t, err)
	b, err := l.Admit(context.Background(), "s", lim, 0)
	require.NoError(t, err)
	_, err = l.Admit(context.Background(), "s", lim, 0)
	var ex *ExceededError
	require.ErrorAs(t, err, &ex)
	require.Equal(t, Concurrency, ex.Limit)
	require.Zero(t, ex.RetryAfter)
	require.Contains(t, ex.Error(), "concurrent")
	_, err = l.Admit(context.Background(), "other", lim, 0)
	require.NoError(t, err, "subjects are apart")
	require.NoError(t, a.Done(0))
	require.NoError(t, a.Done(0)) // a second Done must not free b's slot too
	c, err := l.Admit(context.Background(), "s", lim, 0)
	require.NoError(t, err)
	_, err = l.Admit(context.Background(), "s", lim, 0)
	require.ErrorIs(t, err, ErrLimited)
	require.NoError(t, b.Undo())
	require.NoError(t, c.Done(0))
}

// ctxBackend records whether Release got a live context.
type ctxBackend struct {
	*Memory
	releasedWith error
}

func (b *ctxBackend) Release(ctx context.Context, r Release) error {
	b.releasedWith = ctx.Err()
	return b.Memory.Release(ctx, r)
}

func TestConcurrencyIsReleasedAfterCancel(t *testing.T) {
	t.Parallel()
	be := &ctxBackend{Memory: NewMemory()}
	l := New(be, newClock())
	lim := Limits{MaxConcurrency: 1}
	ctx, cancel := context.WithCancel(context.Background())
	g, err := l.Admit(ctx, "s", lim, 0)
	require.NoError(t, err)
	cancel() // the client left
	require.NoError(t, g.Done(0))
	require.NoError(t, be.releasedWith, "the release must not inherit the call's cancellation")
	_, err = l.Admit(context.Background(), "s", lim, 0)
	require.NoError(t, err)
}

func TestUndoGivesBackTheRequestAndTokens(t *testing.T) {
	t.Parallel()
	l := New(NewMemory(), newClock())
	lim := Limits{RPM: 1, TPM: 100}
	g, err := l.Admit(context.Background(), "s", lim, 100)
	require.NoError(t, err)
	require.NoError(t, g.Undo())
	g, err = l.Admit(context.Background(), "s", lim, 100)
	require.NoError(t, err, "the undone call left the limits as they were")
	require.Equal(t, 0, g.Requests.Remaining)
}

func TestUnlimitedNeedsNoBackend(t *testing.T) {
	t.Parallel()
	l := New(failing{}, newClock())
	g, err := l.Admit(context.Background(), "s", Limits{}, 100)
	require.NoError(t, err)
	require.NoError(t, g.Done(5))
	_, err = l.Admit(context.Background(), "s", Limits{RPM: 1}, 0)
	require.ErrorContains(t, err, "limits backend: down")
	require.False(t, errors.Is(err, ErrLimited), "an outage is not a refusal")
}

type failing struct{}

func (failing) Admit(context.Context, Request) (Decision, error) {
	return Decision{}, errors.New("down")
}
func (failing) Release(context.Context, Release) error { return errors.New("down") }

func TestIdleSubjectsAreSwept(t *testing.T) {
	t.Parallel()
	clk := newClock()
	m := NewMemory()
	l := New(m, clk)
	for i := range 3 * minSweep {
		g, err := l.Admit(context.Background(), "s"+string(rune('a'+i%26))+time.Duration(i).String(), Limits{RPM: 10}, 0)
		require.NoError(t, err)
		require.NoError(t, g.Done(0))
		if i%minSweep == 0 {
			clk.Advance(time.Minute) // what came before is idle now
		}
	}
	require.LessOrEqual(t, m.Len(), 2*minSweep)
}

func TestLimitsValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, Limits{RPM: 1}.Validate())
	err := Limits{RPM: -1, MaxConcurrency: -2}.Validate()
	require.ErrorContains(t, err, "rpm must not be negative")
	require.ErrorContains(t, err, "max_concurrency must not be negative")
}

func TestEstimateTokens(t *testing.T) {
	t.Parallel()
	require.Equal(t, 0, EstimateTokens(0, 0))
	require.Equal(t, 1, EstimateTokens(1, 0))
	require.Equal(t, 25+100, EstimateTokens(100, 100))
}

func TestConcurrentAdmitsNeverOvershoot(t *testing.T) {
	t.Parallel()
	l := New(NewMemory(), newClock())
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := l.Admit(context.Background(), "s", Limits{RPM: 20}, 0); err == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Equal(t, 20, ok)
}

// BenchmarkAdmit is one admission and release on the embedded backend with all
// three limits set.
func BenchmarkAdmit(b *testing.B) {
	l := New(NewMemory(), nil)
	lim := Limits{RPM: 1 << 30, TPM: 1 << 30, MaxConcurrency: 1 << 20}
	b.ReportAllocs()
	for b.Loop() {
		g, err := l.Admit(context.Background(), "key:k", lim, 100)
		if err != nil {
			b.Fatal(err)
		}
		_ = g.Done(50)
	}
}
