package redisstate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Policies for limits while Redis cannot answer (Config.OnError).
const (
	// Allow decides with this replica's own in-memory counters.
	Allow = "allow"
	// Deny refuses every limited call (429, Retry-After one second).
	Deny = "deny"
)

// Defaults of Config's zero values.
const (
	DefaultTimeout        = 250 * time.Millisecond
	DefaultResyncInterval = 10 * time.Second
	DefaultPrefix         = "switchyard:"
	// probeInterval is how often a replica that saw Redis fail tries it again on
	// the request path; in between, limits follow the policy without waiting.
	probeInterval = time.Second
)

// Config is what Open needs.
type Config struct {
	// URL is redis://[user:password@]host:port[/db] or rediss:// (TLS).
	URL string
	// OnError is Allow (default) or Deny.
	OnError string
	// Timeout bounds every Redis call (DefaultTimeout when zero).
	Timeout time.Duration
	// ResyncInterval is the period of the full reload (DefaultResyncInterval).
	ResyncInterval time.Duration
	// Prefix starts every key and channel (DefaultPrefix).
	Prefix string
	// Log receives outage and recovery lines.
	Log *slog.Logger
	// Registerer receives the metrics (nil: not registered).
	Registerer prometheus.Registerer
}

// Client is the connection to the shared store, with the outage tracking every
// part of this package shares.
type Client struct {
	rdb    *redis.Client
	cfg    Config
	log    *slog.Logger
	health *health
	sync   syncer
}

// Open connects lazily (no call is made): a Redis that is down at start is an
// outage like any other, reported by Ready and healed when it returns.
func Open(cfg Config) (*Client, error) {
	opt, err := redis.ParseURL(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("state.redis.url: %s", redactedURLError(err, cfg.URL))
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.ResyncInterval <= 0 {
		cfg.ResyncInterval = DefaultResyncInterval
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if cfg.OnError == "" {
		cfg.OnError = Allow
	}
	if cfg.OnError != Allow && cfg.OnError != Deny {
		return nil, fmt.Errorf("state.redis.on_error: %q is not allow or deny", cfg.OnError)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	routeLibraryLogs(cfg.Log)
	// Every call is bounded by its context (ContextTimeoutEnabled) and by the
	// timeouts; no retries inside the client: the caller's policy decides at once.
	opt.DialTimeout = max(cfg.Timeout, time.Second)
	opt.ReadTimeout, opt.WriteTimeout, opt.PoolTimeout = cfg.Timeout, cfg.Timeout, cfg.Timeout
	opt.ContextTimeoutEnabled = true
	opt.MaxRetries = -1
	opt.DialerRetries = 1
	// Plain commands only (Valkey and older servers): no maintenance-notification
	// handshake, no client-side caching.
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	opt.DisableIdentity = true
	c := &Client{rdb: redis.NewClient(opt), cfg: cfg, log: cfg.Log, health: newHealth(cfg.Log, cfg.OnError)}
	if cfg.Registerer != nil {
		for _, col := range c.health.collectors() {
			if err := cfg.Registerer.Register(col); err != nil {
				return nil, err
			}
		}
	}
	return c, nil
}

// Close closes the connections.
func (c *Client) Close() error { return c.rdb.Close() }

// Redis is the underlying client (tests).
func (c *Client) Redis() *redis.Client { return c.rdb }

// OnError is the limits policy in force during an outage.
func (c *Client) OnError() string { return c.cfg.OnError }

// Up reports whether the last Redis call succeeded.
func (c *Client) Up() bool { return c.health.up() }

// Ready is the readiness detail: the store's state, and whether this replica has
// loaded the shared state at least once (before that it cannot authenticate
// virtual keys or route API-made virtual models, so it is not ready).
func (c *Client) Ready() (bool, string) { return c.health.ready() }

func (c *Client) key(parts ...string) string { return c.cfg.Prefix + strings.Join(parts, ":") }

// call bounds one Redis call by the timeout and records its outcome.
func (c *Client) call(ctx context.Context, op string, f func(ctx context.Context) error) error {
	cctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	err := f(cctx)
	if errors.Is(err, redis.Nil) {
		err = nil
	}
	if err != nil && ctx.Err() != nil {
		// The caller's own context ended (it left, or its deadline, perhaps a
		// gRPC client's short grpc-timeout, passed): that says nothing of
		// Redis. Only the call's own timeout or an error of Redis's is an outage.
		return err
	}
	c.health.record(op, err)
	return err
}

// redactedURLError keeps a URL's password out of a parse error.
func redactedURLError(err error, raw string) string {
	msg := err.Error()
	if i := strings.Index(raw, "@"); i > 0 {
		msg = strings.ReplaceAll(msg, raw[:i], "redis://[redacted]")
	}
	return msg
}

// health tracks outages: up/down, since when, the last error; metrics and the
// log lines of each transition.
type health struct {
	log    *slog.Logger
	policy string

	mu       sync.Mutex
	down     bool
	since    time.Time
	lastErr  string
	lastTry  time.Time
	loaded   bool
	upGauge  prometheus.Gauge
	errs     *prometheus.CounterVec
	fallback *prometheus.CounterVec
}

func newHealth(log *slog.Logger, policy string) *health {
	h := &health{log: log, policy: policy,
		upGauge: prometheus.NewGauge(prometheus.GaugeOpts{Name: "switchyard_state_redis_up",
			Help: "1 while the shared-state Redis answers, 0 during an outage (limits then follow state.redis.on_error)."}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_state_redis_errors_total",
			Help: "Failed Redis calls, by operation (admit, release, load, save, publish, subscribe)."}, []string{"op"}),
		fallback: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_state_limit_outage_decisions_total",
			Help: "Admission checks decided without Redis, by policy (allow: local counters, deny: refused)."}, []string{"policy"}),
	}
	h.upGauge.Set(1)
	return h
}

func (h *health) collectors() []prometheus.Collector {
	return []prometheus.Collector{h.upGauge, h.errs, h.fallback}
}

func (h *health) record(op string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastTry = time.Now()
	if err != nil && !errors.Is(err, context.Canceled) {
		h.errs.WithLabelValues(op).Inc()
		h.lastErr = err.Error()
		if !h.down {
			h.down, h.since = true, time.Now()
			h.upGauge.Set(0)
			h.log.Error("shared state: Redis unreachable; keys and virtual models keep their last known state, limits follow state.redis.on_error",
				"op", op, "error", err.Error(), "on_error", h.policy)
		}
		return
	}
	if err == nil && h.down {
		h.log.Info("shared state: Redis is back", "outage", time.Since(h.since).Round(time.Millisecond).String())
		h.down = false
		h.upGauge.Set(1)
	}
}

func (h *health) up() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.down
}

// skip reports whether a request-path call should not wait on Redis now: it is
// down and was tried less than probeInterval ago.
func (h *health) skip() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.down && time.Since(h.lastTry) < probeInterval
}

func (h *health) decidedWithout(policy string) { h.fallback.WithLabelValues(policy).Inc() }

func (h *health) setLoaded() {
	h.mu.Lock()
	h.loaded = true
	h.mu.Unlock()
}

func (h *health) isLoaded() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.loaded
}

func (h *health) ready() (bool, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case !h.loaded && h.down:
		return false, "shared state not loaded yet: redis unreachable: " + h.lastErr
	case !h.loaded:
		return false, "shared state not loaded yet"
	case h.down:
		return true, fmt.Sprintf("redis unreachable since %s (%s); keys and virtual models: last known state; limits: on_error %s",
			h.since.UTC().Format(time.RFC3339), h.lastErr, h.policy)
	}
	return true, "redis ok"
}
