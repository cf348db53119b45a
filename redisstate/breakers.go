package redisstate

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

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
	Until int64  `json:"until_ms,omitempty"` // a trip's end, Unix milliseconds
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
	now := time.Now()
	return b.record(ctx, provider, model, breakerAction{Trip: true, At: now.UnixMilli(), Until: now.Add(d).UnixMilli()})
}

// Reset records an admin reset of provider's (model's) breaker for every replica.
func (b *Breakers) Reset(ctx context.Context, provider, model string) error {
	if _, err := b.rt.Breaker(provider, model, false); err != nil {
		return err
	}
	return b.record(ctx, provider, model, breakerAction{At: time.Now().UnixMilli()})
}

func (b *Breakers) record(ctx context.Context, provider, model string, a breakerAction) error {
	field := breakerField(provider, model)
	err := b.c.call(ctx, "save", func(ctx context.Context) error {
		seq, err := b.c.rdb.Incr(ctx, b.c.key("breakers", "seq")).Result()
		if err != nil {
			return err
		}
		a.Seq = seq
		raw, _ := json.Marshal(a)
		_, err = b.c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, b.hash(), field, raw)
			b.c.publish(ctx, p, TopicBreakers)
			return nil
		})
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
	if err := b.c.call(ctx, "load", func(ctx context.Context) error {
		var err error
		stored, err = b.c.rdb.HGetAll(ctx, b.hash()).Result()
		return err
	}); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	first := !b.started
	b.started = true
	now := time.Now()
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
