package redisstate

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard/switchyard/usage"
)

// Spend is usage.Totals on Redis: the running spend of each virtual key per
// budget period, shared by every replica, so that a budget holds across them as
// a limit does. Each total is one float key that expires a day after its period
// ends. Every change is mirrored in this replica's own totals, which answer
// while Redis cannot: during an outage a replica judges budgets by what it saw
// itself (a budget may then be overspent by up to what the other replicas spend
// meanwhile; it never blocks a call).
//
// A request's spend reaches Redis off its path: Add notes it here, and a
// background push sends what was added in the last PushDelay in one round
// trip. A replica sees its own spend at once (Get adds what it has not pushed
// yet); the others see it within PushDelay and a round trip.
type Spend struct {
	c     *Client
	local *usage.Memory

	mu      sync.Mutex
	pending map[pendingKey]float64 // spend Redis has not taken yet, by total
	sending map[pendingKey]float64 // the batch a push has under way (Get counts it)
	// unseeded are the store's totals Redis could not take at start (Seed):
	// the next push offers them first, before any spend of theirs.
	unseeded map[pendingKey]float64
	pushMu   sync.Mutex

	kick chan struct{} // an Add since the last push
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// PushDelay is the longest a replica's spend waits before it is pushed to
// Redis, gathering the requests that end meanwhile into one round trip.
const PushDelay = 50 * time.Millisecond

type pendingKey struct {
	key, period string
	start       time.Time
}

// NewSpend shares budgets' totals through c; Close pushes what is left.
func NewSpend(c *Client) *Spend {
	s := &Spend{c: c, local: usage.NewMemory(), pending: map[pendingKey]float64{}, unseeded: map[pendingKey]float64{},
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	return s
}

// run pushes the spend PushDelay after an Add, and while Redis cannot take
// it, again every probeInterval (health's own pace), until Close.
func (s *Spend) run() {
	defer close(s.done)
	wait := time.NewTimer(PushDelay)
	wait.Stop()
	sleep := func(d time.Duration) bool {
		wait.Reset(d)
		select {
		case <-wait.C:
			return true
		case <-s.stop:
			wait.Stop()
			return false
		}
	}
	for {
		select {
		case <-s.kick:
		case <-s.stop:
			return
		}
		for delay := PushDelay; ; delay = probeInterval {
			if !sleep(delay) {
				return
			}
			if s.Push() {
				break
			}
		}
	}
}

// Close stops the background pushes and pushes what is pending (once: spend
// Redis cannot take then is this replica's alone, kept in the store's records).
func (s *Spend) Close() {
	s.once.Do(func() {
		close(s.stop)
		<-s.done
		s.Push()
	})
}

var _ usage.Totals = (*Spend)(nil)

func (s *Spend) key(key, period string, start time.Time) string {
	return s.c.key("spend", key, period, strconv.FormatInt(start.Unix(), 10))
}

// ttl keeps a total until a day after its period ends.
func ttl(period string) time.Duration {
	if period == usage.PeriodMonth {
		return 32 * 24 * time.Hour
	}
	return 2 * 24 * time.Hour
}

// Add implements usage.Totals without waiting for Redis: the spend is pushed
// within PushDelay.
func (s *Spend) Add(key, period string, start time.Time, usd float64) {
	s.local.Add(key, period, start, usd)
	if usd == 0 {
		return
	}
	s.mu.Lock()
	s.pending[pendingKey{key, period, start}] += usd
	s.mu.Unlock()
	s.kickPush()
}

func (s *Spend) kickPush() {
	select {
	case s.kick <- struct{}{}:
	default: // a push is due already
	}
}

// Push sends the pending spend to Redis now, in one round trip (INCRBYFLOAT
// and EXPIRE per total), and says whether none is left pending. Spend Redis
// cannot take is kept and sent with a later push, so an outage delays this
// replica's spend in the shared total but never loses it.
func (s *Spend) Push() bool {
	if s.c.health.skip() { // Redis is down: no round trip until health's next probe
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.settled()
	}
	s.pushMu.Lock() // one push at a time (the background one, Close's, a test's)
	defer s.pushMu.Unlock()
	s.mu.Lock()
	if s.settled() {
		s.mu.Unlock()
		return true
	}
	batch, seeds := s.pending, s.unseeded
	s.pending, s.sending, s.unseeded = map[pendingKey]float64{}, batch, map[pendingKey]float64{}
	s.mu.Unlock()
	err := s.push(seeds, batch)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sending = nil
	if err != nil {
		for k, v := range batch { // back in line for the next try
			s.pending[k] += v
		}
		for k, v := range seeds {
			s.unseeded[k] = v
		}
	}
	return s.settled()
}

// settled says Redis has taken everything: no spend and no seed pending.
func (s *Spend) settled() bool { return len(s.pending) == 0 && len(s.unseeded) == 0 }

// push seeds the totals Redis has none of yet and adds batch to the shared
// totals, in one transaction (the seeds first: a total's own spend must not
// make it exist before its seed).
func (s *Spend) push(seeds, batch map[pendingKey]float64) error {
	return s.c.call(context.Background(), "spend", func(ctx context.Context) error {
		_, err := s.c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			for k, usd := range seeds {
				p.SetNX(ctx, s.key(k.key, k.period, k.start), strconv.FormatFloat(usd, 'g', -1, 64), ttl(k.period))
			}
			for k, usd := range batch {
				rk := s.key(k.key, k.period, k.start)
				p.IncrByFloat(ctx, rk, usd)
				p.Expire(ctx, rk, ttl(k.period))
			}
			return nil
		})
		return err
	})
}

// Get implements usage.Totals: the shared total, or this replica's own while
// Redis cannot answer.
func (s *Spend) Get(key, period string, start time.Time) float64 {
	if s.c.health.skip() {
		return s.local.Get(key, period, start)
	}
	var v float64
	err := s.c.call(context.Background(), "spend", func(ctx context.Context) error {
		var err error
		v, err = s.c.rdb.Get(ctx, s.key(key, period, start)).Float64()
		if errors.Is(err, redis.Nil) {
			v, err = 0, nil
		}
		return err
	})
	if err != nil {
		return s.local.Get(key, period, start)
	}
	s.mu.Lock()
	k := pendingKey{key, period, start}
	v += s.pending[k] + s.sending[k] // this replica's spend not taken yet (or being taken: counted twice, briefly, rather than not at all)
	s.mu.Unlock()
	return max(v, s.local.Get(key, period, start)) // never less than what this replica saw itself
}

// Seed implements usage.Seeder: a total the store holds is written only where
// Redis has none yet (the first replica to start seeds it; the others, and
// restarts, find it there and would otherwise count it twice). A seed Redis
// cannot take now (down at start) is offered again with the pushes, until it
// is taken: other replicas would otherwise never count the stored spend.
func (s *Spend) Seed(key, period string, start time.Time, usd float64) {
	s.local.Add(key, period, start, usd)
	k := s.key(key, period, start)
	err := s.c.call(context.Background(), "spend", func(ctx context.Context) error {
		return s.c.rdb.SetNX(ctx, k, strconv.FormatFloat(usd, 'g', -1, 64), ttl(period)).Err()
	})
	if err != nil {
		s.mu.Lock()
		s.unseeded[pendingKey{key, period, start}] = usd
		s.mu.Unlock()
		s.kickPush()
	}
}
