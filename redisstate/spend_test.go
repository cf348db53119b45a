package redisstate

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/redistest"
	"github.com/switchyard/switchyard/usage"
)

// Budgets' totals are shared: what one replica adds the others see, a seed from
// the store is taken once however many replicas start, and while Redis cannot
// answer each replica judges by what it saw itself.
func TestSpendIsSharedByReplicas(t *testing.T) {
	srv := redistest.New(t)
	a, b := newSpend(t, open(t, srv, Allow)), newSpend(t, open(t, srv, Allow))
	// open gives each client the test's prefix: both replicas share it.
	day := usage.PeriodStart(usage.PeriodDay, time.Now())

	t.Run("one replica's spend is every replica's", func(t *testing.T) {
		a.Add("key_1", usage.PeriodDay, day, 0.25)
		require.InDelta(t, 0.25, a.Get("key_1", usage.PeriodDay, day), 1e-9, "a sees its own spend before it is pushed")
		b.Add("key_1", usage.PeriodDay, day, 0.5)
		a.Push()
		b.Push()
		require.InDelta(t, 0.75, a.Get("key_1", usage.PeriodDay, day), 1e-9)
		require.InDelta(t, 0.75, b.Get("key_1", usage.PeriodDay, day), 1e-9)
		require.Zero(t, a.Get("key_1", usage.PeriodDay, day.AddDate(0, 0, 1)), "a new period starts at 0")
	})
	t.Run("the store's seed is taken once", func(t *testing.T) {
		a.Seed("key_2", usage.PeriodMonth, day, 3)
		b.Seed("key_2", usage.PeriodMonth, day, 3) // a second replica starting, or a restart
		require.InDelta(t, 3, b.Get("key_2", usage.PeriodMonth, day), 1e-9)
	})
	t.Run("an outage falls back to this replica's own totals, and loses nothing", func(t *testing.T) {
		srv.Stop()
		a.Add("key_1", usage.PeriodDay, day, 1)
		require.InDelta(t, 1.25, a.Get("key_1", usage.PeriodDay, day), 1e-9, "a's own 0.25 + 1")
		srv.Start()
		require.Eventually(t, func() bool { // once Redis is back, the outage's spend is pushed with no new one
			return b.Get("key_1", usage.PeriodDay, day) >= 1.75
		}, 5*time.Second, 50*time.Millisecond)
	})
}

// Spend reaches Redis within PushDelay of an Add, without another call; and
// Close pushes what is left.
func TestSpendIsPushedInTheBackground(t *testing.T) {
	srv := redistest.New(t)
	a, b := newSpend(t, open(t, srv, Allow)), newSpend(t, open(t, srv, Allow))
	day := usage.PeriodStart(usage.PeriodDay, time.Now())
	a.Add("key_4", usage.PeriodDay, day, 0.5)
	require.Eventually(t, func() bool { return b.Get("key_4", usage.PeriodDay, day) == 0.5 }, 5*time.Second, 10*time.Millisecond)
	a.Add("key_5", usage.PeriodDay, day, 0.25)
	a.Close()
	require.InDelta(t, 0.25, b.Get("key_5", usage.PeriodDay, day), 1e-9, "pushed by Close")
}

// newSpend is NewSpend, closed when the test ends.
func newSpend(t *testing.T, c *Client) *Spend {
	s := NewSpend(c)
	t.Cleanup(s.Close)
	return s
}

// usage.Spend seeds shared totals with Seed, not Add.
func TestUsageSpendSeedsSharedTotalsOnce(t *testing.T) {
	srv := redistest.New(t)
	c := open(t, srv, Allow)
	st := fixedStore{"key_3": 2}
	for range 3 { // three replicas starting
		require.NoError(t, usage.NewSpend(newSpend(t, c), nil).Seed(t.Context(), st))
	}
	over, spent, _ := usage.NewSpend(newSpend(t, c), nil).Over("key_3", 5, usage.PeriodDay)
	require.False(t, over)
	require.InDelta(t, 2, spent, 1e-9)
}

// fixedStore is a spend source whose answer is its spend per key.
type fixedStore map[string]float64

func (f fixedStore) SpendSince(context.Context, time.Time) (map[string]float64, error) { return f, nil }

// While a push is under way, the replica still counts what it sends: a budget
// check then never reads less than what was spent.
func TestSpendCountsAPushUnderWay(t *testing.T) {
	srv := redistest.New(t)
	a, b := newSpend(t, open(t, srv, Allow)), newSpend(t, open(t, srv, Allow))
	day := usage.PeriodStart(usage.PeriodDay, time.Now())
	b.Add("key_6", usage.PeriodDay, day, 5)
	require.True(t, b.Push())
	// Redis holds writes for a while (within the client's timeout): a's push waits in its round trip.
	require.NoError(t, a.c.Redis().Do(t.Context(), "CLIENT", "PAUSE", "150", "WRITE").Err())
	a.Add("key_6", usage.PeriodDay, day, 1)
	pushed := make(chan bool)
	go func() { pushed <- a.Push() }()
	require.Eventually(t, func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.batch != nil
	}, 5*time.Second, time.Millisecond, "the push is under way")
	require.GreaterOrEqual(t, a.Get("key_6", usage.PeriodDay, day), 6-1e-9, "5 in Redis, 1 being sent")
	require.True(t, <-pushed)
	require.InDelta(t, 6, b.Get("key_6", usage.PeriodDay, day), 1e-9)
}

// A replica that starts while Redis is down cannot seed the store's spend
// then: it offers the seed again with its pushes, so that once Redis is back
// the other replicas count the stored spend too (before, they never did).
func TestASeedRedisMissedAtStartIsGivenLater(t *testing.T) {
	srv := redistest.New(t)
	a := newSpend(t, open(t, srv, Allow))
	day := usage.PeriodStart(usage.PeriodDay, time.Now())
	srv.Stop()
	a.Seed("key_7", usage.PeriodDay, day, 2)
	require.InDelta(t, 2, a.Get("key_7", usage.PeriodDay, day), 1e-9, "the replica counts its seed meanwhile")
	srv.Start()
	a.Add("key_7", usage.PeriodDay, day, 1)
	require.Eventually(t, func() bool { return a.Push() }, 5*time.Second, 50*time.Millisecond, "pushed once Redis is back")
	b := newSpend(t, open(t, srv, Allow))
	require.InDelta(t, 3, b.Get("key_7", usage.PeriodDay, day), 1e-9, "the stored 2 and the new 1")
	b.Seed("key_7", usage.PeriodDay, day, 2) // a replica starting now finds the total there
	require.InDelta(t, 3, b.Get("key_7", usage.PeriodDay, day), 1e-9)
}

// A push whose answer came after the client's timeout was taken all the same:
// sending that spend again must not count it twice.
func TestAPushWhoseAnswerWasLostIsCountedOnce(t *testing.T) {
	srv := redistest.New(t)
	c, slow := slowAnswers(t, srv, Allow)
	a, b := newSpend(t, c), newSpend(t, open(t, srv, Allow))
	day := usage.PeriodStart(usage.PeriodDay, time.Now())
	a.Add("key_8", usage.PeriodDay, day, 0.25)
	require.True(t, a.Push())
	slow.Store(true)
	a.Add("key_8", usage.PeriodDay, day, 1)
	require.False(t, a.Push(), "the answer came too late")
	a.Add("key_8", usage.PeriodDay, day, 0.5) // spend after the lost push
	require.InDelta(t, 1.75, a.Get("key_8", usage.PeriodDay, day), 1e-9, "counted while unacknowledged")
	slow.Store(false)
	require.Eventually(t, a.Push, 10*time.Second, 50*time.Millisecond, "pushed once Redis answers in time")
	require.InDelta(t, 1.75, b.Get("key_8", usage.PeriodDay, day), 1e-9, "the lost push's spend is counted once")
	require.InDelta(t, 1.75, a.Get("key_8", usage.PeriodDay, day), 1e-9)
}
