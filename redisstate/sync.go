package redisstate

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Topics name what changed, as published on the events channel.
const (
	TopicVirtualModels = "virtual_models"
	TopicBreakers      = "breakers"
	TopicKeys          = "keys"
)

// ErrUnavailable marks an admin change refused because Redis cannot store it: a
// change made on one replica only would silently differ from the others.
var ErrUnavailable = errors.New("shared state unavailable")

// UnavailableError is a change Redis could not store. It matches ErrUnavailable
// and is a gRPC Unavailable (HTTP 503).
type UnavailableError struct {
	// What names the change ("virtual models", "breaker trip", "key").
	What string
	Err  error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("shared state (redis) unreachable: the %s change was not made on any replica; retry when it is back: %v", e.What, e.Err)
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// Is matches ErrUnavailable.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// GRPCStatus makes it Unavailable at the gRPC boundary.
func (e *UnavailableError) GRPCStatus() *status.Status {
	return status.New(codes.Unavailable, e.Error())
}

// syncer runs the pub/sub subscription and the periodic resync, calling each
// topic's reload.
type syncer struct {
	mu      sync.Mutex
	reloads map[string]func(ctx context.Context) error
	order   []string
}

// OnChange registers topic's reload: called when a message names topic, at every
// resync and after the subscription (re)connects. Register before Start.
func (c *Client) OnChange(topic string, reload func(ctx context.Context) error) {
	c.sync.mu.Lock()
	defer c.sync.mu.Unlock()
	if c.sync.reloads == nil {
		c.sync.reloads = map[string]func(context.Context) error{}
	}
	if _, ok := c.sync.reloads[topic]; !ok {
		c.sync.order = append(c.sync.order, topic)
	}
	c.sync.reloads[topic] = reload
}

func (c *Client) channel() string { return c.key("events") }

// publish tells every replica (this one included) that topic changed.
func (c *Client) publish(ctx context.Context, pipe redis.Pipeliner, topic string) {
	pipe.Publish(ctx, c.channel(), topic)
}

// reload runs topic's reload (all topics when topic is "").
func (c *Client) reload(ctx context.Context, topic string) error {
	c.sync.mu.Lock()
	var fs []func(context.Context) error
	for _, t := range c.sync.order {
		if topic == "" || t == topic {
			fs = append(fs, c.sync.reloads[t])
		}
	}
	c.sync.mu.Unlock()
	var errs []error
	for _, f := range fs {
		errs = append(errs, f(ctx))
	}
	return errors.Join(errs...)
}

// Resync reloads everything now; the first success makes the replica ready.
func (c *Client) Resync(ctx context.Context) error {
	// A reload may read nothing itself (the keys' only tells the registry): the
	// PING makes "loaded" mean that Redis answered.
	if err := c.call(ctx, "load", func(ctx context.Context) error { return c.rdb.Ping(ctx).Err() }); err != nil {
		return err
	}
	if err := c.reload(ctx, ""); err != nil {
		return err
	}
	c.health.setLoaded()
	return nil
}

// Start loads the shared state once (bounded by ctx; a failure is logged and
// retried in the background: the replica stays not ready until it succeeds),
// then follows changes until stop is called.
func (c *Client) Start(ctx context.Context) (stop func()) {
	if err := c.Resync(ctx); err != nil {
		c.log.Error("shared state: first load from Redis failed; not ready until it succeeds (retried every second)", "error", err.Error())
	}
	bg, cancel := context.WithCancel(context.Background())
	// A blocked read on the subscription ignores its context: closing it ends the read.
	ps := c.rdb.Subscribe(bg)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); c.subscribe(bg, ps) }()
	go func() { defer wg.Done(); c.resyncLoop(bg) }()
	return func() { cancel(); _ = ps.Close(); wg.Wait() }
}

// receiveTimeout is the longest a subscription waits for a message before it
// pings Redis (a dead connection is found within it).
const receiveTimeout = 5 * time.Second

// resyncLoop reloads everything every ResyncInterval (every second until the
// first load succeeded).
func (c *Client) resyncLoop(ctx context.Context) {
	for {
		wait := c.cfg.ResyncInterval
		if ok, _ := c.health.ready(); !ok {
			wait = min(wait, probeInterval)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		if err := c.Resync(ctx); err != nil && ctx.Err() == nil {
			c.log.Debug("shared state: resync failed", "error", err.Error())
		}
	}
}

// subscribe follows the events channel. go-redis reconnects and re-subscribes
// after an error; each (re)subscription triggers a full reload, since messages
// sent meanwhile are lost.
func (c *Client) subscribe(ctx context.Context, ps *redis.PubSub) {
	subscribed := false
	for ctx.Err() == nil {
		if !subscribed {
			sctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
			err := ps.Subscribe(sctx, c.channel())
			cancel()
			c.health.record("subscribe", err)
			if err != nil {
				sleep(ctx, probeInterval)
				continue
			}
			subscribed = true
		}
		msg, err := ps.ReceiveTimeout(ctx, min(receiveTimeout, c.cfg.ResyncInterval))
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				pctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
				err = ps.Ping(pctx)
				cancel()
				if err == nil {
					continue
				}
			}
			c.health.record("subscribe", err)
			sleep(ctx, probeInterval/4)
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				c.health.record("subscribe", nil)
				if err := c.Resync(ctx); err != nil && ctx.Err() == nil {
					c.log.Debug("shared state: reload after (re)subscribing failed", "error", err.Error())
				}
			}
		case *redis.Message:
			if err := c.reload(ctx, m.Payload); err != nil && ctx.Err() == nil {
				c.log.Warn("shared state: reload after a change failed; the next resync retries", "topic", m.Payload, "error", err.Error())
			}
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
