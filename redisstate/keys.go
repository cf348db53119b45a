package redisstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard/switchyard/keys"
)

// Keys is keys.Store on Redis: one hash, key id -> the key's record as JSON
// (hashes only, never secrets). Subscribers hear every change, this replica's and
// the others', and every resync; keys.Registry then re-reads with List and keeps
// its last known keys when that fails.
type Keys struct {
	c *Client

	mu   sync.Mutex
	subs map[int]func()
	next int
}

var _ keys.Store = (*Keys)(nil)

// NewKeys returns the Redis key store.
func NewKeys(c *Client) *Keys {
	k := &Keys{c: c, subs: map[int]func(){}}
	c.OnChange(TopicKeys, func(context.Context) error { k.notify(); return nil })
	return k
}

func (k *Keys) hash() string { return k.c.key("keys") }

// List implements keys.Store. Before the shared state was ever loaded (Redis
// down since start), a failure lists no keys instead of failing start-up: the
// replica is not ready meanwhile, and the first resync that succeeds loads them.
func (k *Keys) List(ctx context.Context) ([]keys.Key, error) {
	var stored map[string]string
	if err := k.c.call(ctx, "load", func(ctx context.Context) error {
		var err error
		stored, err = k.c.rdb.HGetAll(ctx, k.hash()).Result()
		return err
	}); err != nil {
		if !k.c.health.isLoaded() {
			return nil, nil
		}
		return nil, err
	}
	out := make([]keys.Key, 0, len(stored))
	for id, raw := range stored {
		var key keys.Key
		if err := json.Unmarshal([]byte(raw), &key); err != nil {
			k.c.log.Warn("shared state: skipping a stored key that does not parse", "id", id, "error", err.Error())
			continue
		}
		out = append(out, key)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, nil
}

// Put implements keys.Store.
func (k *Keys) Put(ctx context.Context, key keys.Key) error {
	raw, err := json.Marshal(key)
	if err != nil {
		return err
	}
	return k.write(ctx, func(ctx context.Context, p redis.Pipeliner) { p.HSet(ctx, k.hash(), key.ID, raw) })
}

// Change implements keys.Store: the record is read under WATCH and written in
// a transaction, so a write by another replica in between (a revocation) makes
// the transaction fail and the step start again from the new record.
func (k *Keys) Change(ctx context.Context, id string, edit func(*keys.Key) error) (keys.Key, error) {
	var out keys.Key
	// refused is an answer Redis gave that is no outage: edit's own refusal,
	// no such key, a stored record that does not parse, or a record others kept
	// changing under the write.
	var refused error
	err := k.c.call(ctx, "save", func(ctx context.Context) error {
		for range maxChangeTries {
			refused = nil
			err := k.c.rdb.Watch(ctx, func(tx *redis.Tx) error {
				raw, err := tx.HGet(ctx, k.hash(), id).Bytes()
				if errors.Is(err, redis.Nil) {
					refused = keys.ErrNotFound
					return nil
				}
				if err != nil {
					return err
				}
				var key keys.Key
				if err := json.Unmarshal(raw, &key); err != nil {
					refused = fmt.Errorf("the stored key %s does not parse: %w", id, err)
					return nil
				}
				if refused = edit(&key); refused != nil {
					return nil
				}
				if raw, err = json.Marshal(key); err != nil {
					refused = err
					return nil
				}
				_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.HSet(ctx, k.hash(), id, raw)
					k.c.publish(ctx, p, TopicKeys)
					return nil
				})
				out = key
				return err
			}, k.hash())
			if !errors.Is(err, redis.TxFailedErr) {
				return err
			}
		}
		refused = keys.ErrContended
		return nil
	})
	if err != nil {
		return keys.Key{}, &UnavailableError{What: "key", Err: err}
	}
	if refused != nil {
		return keys.Key{}, refused
	}
	k.notify()
	return out, nil
}

// maxChangeTries bounds the restarts of a change whose record others keep
// changing under it (the WATCH is on the hash of every key).
const maxChangeTries = 16

// Delete implements keys.Store.
func (k *Keys) Delete(ctx context.Context, id string) error {
	var del *redis.IntCmd
	if err := k.write(ctx, func(ctx context.Context, p redis.Pipeliner) { del = p.HDel(ctx, k.hash(), id) }); err != nil {
		return err
	}
	if del.Val() == 0 {
		return keys.ErrNotFound
	}
	return nil
}

func (k *Keys) write(ctx context.Context, f func(context.Context, redis.Pipeliner)) error {
	err := k.c.call(ctx, "save", func(ctx context.Context) error {
		_, err := k.c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			f(ctx, p)
			k.c.publish(ctx, p, TopicKeys)
			return nil
		})
		return err
	})
	if err != nil {
		return &UnavailableError{What: "key", Err: err}
	}
	// This replica's registry hears its own change at once, not a round trip later.
	k.notify()
	return nil
}

// Subscribe implements keys.Store.
func (k *Keys) Subscribe(changed func()) func() {
	k.mu.Lock()
	defer k.mu.Unlock()
	id := k.next
	k.next++
	k.subs[id] = changed
	return func() {
		k.mu.Lock()
		delete(k.subs, id)
		k.mu.Unlock()
	}
}

func (k *Keys) notify() {
	k.mu.Lock()
	subs := make([]func(), 0, len(k.subs))
	for _, s := range k.subs {
		subs = append(subs, s)
	}
	k.mu.Unlock()
	for _, s := range subs {
		s()
	}
}
