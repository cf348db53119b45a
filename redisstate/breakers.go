package redisstate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard/switchyard/resilience"
	"github.com/switchyard/switchyard/router"
)

// Breakers shares admin breaker trips and resets: one hash, "provider/model" ->
// the last admin action on that breaker with a sequence number; each replica
// applies an action once. Failure counting stays per replica (see the package
// doc).
type Breakers struct {
	c  *Client
	rt *router.Router

	mu      sync.Mutex
	applied map[string]int64 // breaker -> sequence number of the last action applied here
	started bool
}

type breakerAction struct {
	Seq   int64  `json:"seq"`
	Trip  bool   `json:"trip"`
	Until int64  `json:"until_ms,omitempty"` // a trip's end, Unix milliseconds on Redis's clock
	At    int64  `json:"at_ms"`
	Who   string `json:"who,omitempty"`
}

// NewBreakers follows the stored admin breaker actions for rt.
func NewBreakers(c *Client, rt *router.Router) *Breakers {
	b := &Breakers{c: c, rt: rt, applied: map[string]int64{}}
	c.OnChange(TopicBreakers, b.Apply)
	return b
}

func (b *Breakers) hash() string { return b.c.key("breakers") }

func breakerField(provider, model string) string { return provider + "/" + model }

// Trip records an admin trip of provider's (model's) breaker for d (0: its
// configured timeout) for every replica. Call it before tripping locally: an
// error means the trip could not be shared, and should not be made.
func (b *Breakers) Trip(ctx context.Context, provider, model string, d time.Duration) error {
	br, err := b.rt.Breaker(provider, model, true)
	if err != nil {
		return err
	}
	if d <= 0 {
		d = br.Snapshot().Settings.Timeout
	}
	return b.record(ctx, br, breakerAction{Trip: true, At: time.Now().UnixMilli()}, d)
}

// Reset records an admin reset of provider's (model's) breaker for every replica.
func (b *Breakers) Reset(ctx context.Context, provider, model string) error {
	br, err := b.rt.Breaker(provider, model, false)
	if err != nil {
		return err
	}
	return b.record(ctx, br, breakerAction{At: time.Now().UnixMilli()}, 0)
}

// recordScript numbers an action and stores it under its breaker in one step,
// so that a later number is never stored before an earlier one (two admins
// acting on one breaker at once from two replicas).
// A trip's end is Redis's clock plus its duration, and every replica judges
// what is left of it by Redis's clock too: replicas whose clocks disagree
// would otherwise shorten or lengthen it by their skew.
// KEYS[1] the sequence, KEYS[2] the hash; ARGV[1] the field, ARGV[2] the
// action's JSON after its opening brace, ARGV[3] and ARGV[4] the change
// notice's channel and topic, ARGV[5] a trip's duration in ms (0: a reset).
// Returns the action's number.
var recordScript = redis.NewScript(`
local seq = redis.call('INCR', KEYS[1])
local ends = ''
local d = tonumber(ARGV[5])
if d > 0 then
  local t = redis.call('TIME')
  ends = '"until_ms":' .. string.format('%.0f', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + d) .. ','
end
redis.call('HSET', KEYS[2], ARGV[1], '{"seq":' .. seq .. ',' .. ends .. ARGV[2])
redis.call('PUBLISH', ARGV[3], ARGV[4])
return seq
`)

// record stores an action under br's own name: with provider scope every
// model names the provider's one breaker, and must not be a field of its own
// (a trip named with a model and a reset without would be two actions).
func (b *Breakers) record(ctx context.Context, br *resilience.Breaker, a breakerAction, trip time.Duration) error {
	field := breakerField(br.Name())
	raw, _ := json.Marshal(a) // {"seq":0,...}: the script writes the number
	rest := raw[bytes.IndexByte(raw, ',')+1:]
	err := b.c.call(ctx, "save", func(ctx context.Context) error {
		var err error
		a.Seq, err = recordScript.Run(ctx, b.c.rdb, []string{b.c.key("breakers", "seq"), b.hash()},
			field, rest, b.c.channel(), TopicBreakers, trip.Milliseconds()).Int64()
		return err
	})
	if err != nil {
		return &UnavailableError{What: "breaker", Err: err}
	}
	// This replica makes the change itself (the caller, right after): never again.
	b.mu.Lock()
	b.applied[field] = max(b.applied[field], a.Seq)
	b.mu.Unlock()
	return nil
}

// Apply applies every stored action not applied here yet: a trip still in force
// is made for what is left of it, a reset resets. At the first load, resets are
// only noted (this replica's breakers start closed) and only trips still in force
// are made.
func (b *Breakers) Apply(ctx context.Context) error {
	var stored map[string]string
	var now time.Time // Redis's clock, which trips' ends are on
	if err := b.c.call(ctx, "load", func(ctx context.Context) error {
		var all *redis.MapStringStringCmd
		var clock *redis.TimeCmd
		if _, err := b.c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			all, clock = p.HGetAll(ctx, b.hash()), p.Time(ctx)
			return nil
		}); err != nil {
			return err
		}
		stored, now = all.Val(), clock.Val()
		return nil
	}); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	first := !b.started
	b.started = true
	for field, raw := range stored {
		var a breakerAction
		if json.Unmarshal([]byte(raw), &a) != nil || a.Seq <= b.applied[field] {
			continue
		}
		b.applied[field] = a.Seq
		provider, model, _ := strings.Cut(field, "/")
		switch {
		case a.Trip:
			left := time.UnixMilli(a.Until).Sub(now)
			if left <= 0 {
				continue
			}
			if _, err := b.rt.TripBreaker(provider, model, left); err != nil {
				b.c.log.Warn("shared state: could not apply a breaker trip made elsewhere", "provider", provider, "model", model, "error", err.Error())
			}
		case !first:
			if _, err := b.rt.ResetBreaker(provider, model); err != nil && !errors.Is(err, router.ErrBreakerNotFound) {
				b.c.log.Warn("shared state: could not apply a breaker reset made elsewhere", "provider", provider, "model", model, "error", err.Error())
			}
		}
	}
	return nil
}
