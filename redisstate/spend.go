package redisstate

import (
	"context"
	"crypto/rand"
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
	pending map[pendingKey]float64 // spend not in a batch yet, by total
	// batch is the spend a push has sent, or is sending, and Redis has not
	// acknowledged: it is sent again, under its number, until Redis does (Get
	// counts it meanwhile).
	batch *batch
	// pushes numbers this replica's batches under replica: Redis keeps the
	// last number it took, so that a batch whose answer was lost (it came after
	// the timeout) is not taken twice when it is sent again.
	replica string
	pushes  uint64
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

// batch is pushed spend, numbered.
type batch struct {
	n     uint64
	spend map[pendingKey]float64
}

type pendingKey struct {
	key, period string
	start       time.Time
}

// NewSpend shares budgets' totals through c; Close pushes what is left.
func NewSpend(c *Client) *Spend {
	s := &Spend{c: c, local: usage.NewMemory(), pending: map[pendingKey]float64{}, unseeded: map[pendingKey]float64{},
		replica: rand.Text(), kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
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

// Push sends the pending spend to Redis now, in one round trip (a script that
// adds to each total and renews its expiry), and says whether none is left
// pending. Spend Redis cannot take is sent again with a later push, as the same
// numbered batch, so an outage delays this replica's spend in the shared total
// but never loses it, and a push whose answer was lost is not counted twice.
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
	if s.batch == nil && len(s.pending) > 0 {
		s.pushes++
		s.batch = &batch{n: s.pushes, spend: s.pending}
		s.pending = map[pendingKey]float64{}
	}
	b, seeds := s.batch, s.unseeded
	s.unseeded = map[pendingKey]float64{}
	s.mu.Unlock()
	err := s.push(seeds, b)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		for k, v := range seeds { // back in line for the next try
			s.unseeded[k] = v
		}
		return false
	}
	s.batch = nil
	return s.settled()
}

// settled says Redis has taken everything: no spend and no seed pending.
func (s *Spend) settled() bool { return s.batch == nil && len(s.pending) == 0 && len(s.unseeded) == 0 }

// pushScript seeds the totals Redis has none of yet, then adds a batch to the
// shared totals unless Redis took it already: it keeps the number of the last
// batch it took from each replica.
// KEYS[1] the replica's last batch number; KEYS[2..] the seeds', then the batch's totals.
// ARGV batch number (0: none), its key's TTL (s), the seeds' count; then amount, TTL (s) per total.
var pushScript = redis.NewScript(`
local seeds = tonumber(ARGV[3])
for i = 1, seeds do
  redis.call('SET', KEYS[i + 1], ARGV[2 + 2 * i], 'NX', 'EX', ARGV[3 + 2 * i])
end
if tonumber(redis.call('GET', KEYS[1]) or '0') >= tonumber(ARGV[1]) then return 0 end
for i = seeds + 1, #KEYS - 1 do
  redis.call('INCRBYFLOAT', KEYS[i + 1], ARGV[2 + 2 * i])
  redis.call('EXPIRE', KEYS[i + 1], ARGV[3 + 2 * i])
end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
return 1
`)

// push runs pushScript: the seeds first (a total's own spend must not make it
// exist before its seed), then b (nil: none).
func (s *Spend) push(seeds map[pendingKey]float64, b *batch) error {
	keys := []string{s.c.key("spend", "pushed", s.replica)}
	args := []any{0, int64(ttl(usage.PeriodMonth) / time.Second), len(seeds)}
	add := func(k pendingKey, usd float64) {
		keys = append(keys, s.key(k.key, k.period, k.start))
		args = append(args, strconv.FormatFloat(usd, 'g', -1, 64), int64(ttl(k.period)/time.Second))
	}
	for k, usd := range seeds {
		add(k, usd)
	}
	if b != nil {
		args[0] = b.n
		for k, usd := range b.spend {
			add(k, usd)
		}
	}
	return s.c.call(context.Background(), "spend", func(ctx context.Context) error {
		return pushScript.Run(ctx, s.c.rdb, keys, args...).Err()
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
	v += s.pending[k] // this replica's spend not taken yet (or being taken: counted twice, briefly, rather than not at all)
	if s.batch != nil {
		v += s.batch.spend[k]
	}
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
