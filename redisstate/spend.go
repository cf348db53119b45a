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
type Spend struct {
	c     *Client
	local *usage.Memory

	mu      sync.Mutex
	pending map[pendingKey]float64 // spend Redis has not taken yet, by total
}

type pendingKey struct {
	key, period string
	start       time.Time
}

// NewSpend shares budgets' totals through c.
func NewSpend(c *Client) *Spend {
	return &Spend{c: c, local: usage.NewMemory(), pending: map[pendingKey]float64{}}
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

// Add implements usage.Totals: one round trip (INCRBYFLOAT and EXPIRE). Spend
// Redis cannot take now is kept and added with the next one it takes, so an
// outage delays this replica's spend in the shared total but never loses it.
func (s *Spend) Add(key, period string, start time.Time, usd float64) {
	s.local.Add(key, period, start, usd)
	if usd == 0 {
		return
	}
	s.mu.Lock()
	s.pending[pendingKey{key, period, start}] += usd
	batch := s.pending
	s.pending = map[pendingKey]float64{}
	s.mu.Unlock()
	if s.c.health.skip() || s.push(batch) != nil {
		s.mu.Lock()
		for k, v := range batch { // back in line for the next try
			s.pending[k] += v
		}
		s.mu.Unlock()
	}
}

// push adds batch to the shared totals in one transaction.
func (s *Spend) push(batch map[pendingKey]float64) error {
	return s.c.call(context.Background(), "spend", func(ctx context.Context) error {
		_, err := s.c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
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
	v += s.pending[pendingKey{key, period, start}] // this replica's spend not taken yet
	s.mu.Unlock()
	return max(v, s.local.Get(key, period, start)) // never less than what this replica saw itself
}

// Seed implements usage.Seeder: a total the store holds is written only where
// Redis has none yet (the first replica to start seeds it; the others, and
// restarts, find it there and would otherwise count it twice).
func (s *Spend) Seed(key, period string, start time.Time, usd float64) {
	s.local.Add(key, period, start, usd)
	k := s.key(key, period, start)
	_ = s.c.call(context.Background(), "spend", func(ctx context.Context) error {
		return s.c.rdb.SetNX(ctx, k, strconv.FormatFloat(usd, 'g', -1, 64), ttl(period)).Err()
	})
}
