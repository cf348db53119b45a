package config

import (
	"math"
	"strings"
	"time"
)

// Usage configures the usage ledger: one record per answered inference request
// (tokens, cost, attempts, timing, outcome; never prompt or completion text).
type Usage struct {
	// Store is where records go: "sqlite" (the default: usage.db in
	// server.data_dir, WAL mode), "postgres" (usage.dsn, shared by replicas) or
	// "none".
	Store string `yaml:"store"`
	// DSN is Postgres's connection string (postgres://user:pass@host:port/db).
	DSN Secret `yaml:"dsn"`
	// QueueSize bounds the records waiting for the store; past it records are
	// dropped and counted (switchyard_usage_records_dropped_total), never waited for.
	QueueSize int `yaml:"queue_size"`
	// BatchSize is the most records one store write takes.
	BatchSize int `yaml:"batch_size"`
	// FlushInterval is the longest a record waits for its batch to fill.
	FlushInterval time.Duration `yaml:"flush_interval"`
	// Retention is how long records are kept: older ones are deleted hourly (0
	// keeps every record). At least MinUsageRetention, so that a monthly budget's
	// spend, read from the store at start, is still there.
	Retention time.Duration `yaml:"retention"`
}

// Price is one model's price in USD per million tokens.
type Price struct {
	// Input prices prompt tokens (those not read from or written to a cache).
	Input float64 `yaml:"input"`
	// Output prices completion tokens, reasoning tokens included.
	Output float64 `yaml:"output"`
	// CachedInput prices prompt tokens read from the provider's cache; unset: input.
	CachedInput *float64 `yaml:"cached_input"`
	// CacheWriteInput prices prompt tokens written to the cache (Anthropic); unset: input.
	CacheWriteInput *float64 `yaml:"cache_write_input"`
}

// Usage ledger defaults. The README's settings table is checked against these.
const (
	DefaultUsageStore         = "sqlite"
	DefaultUsageQueueSize     = 10000
	DefaultUsageBatchSize     = 500
	DefaultUsageFlushInterval = 200 * time.Millisecond
	// MinUsageRetention is the shortest usage.retention: the longest month and
	// a day (replicas' clocks and the period's boundary may differ a little).
	MinUsageRetention = 32 * 24 * time.Hour
)

func applyUsageDefaults(u *Usage) {
	if u.Store == "" {
		u.Store = DefaultUsageStore
	}
	if u.QueueSize == 0 {
		u.QueueSize = DefaultUsageQueueSize
	}
	if u.BatchSize == 0 {
		u.BatchSize = DefaultUsageBatchSize
	}
	if u.FlushInterval == 0 {
		u.FlushInterval = DefaultUsageFlushInterval
	}
}

func validateUsage(c *Config, add addFunc) {
	u := c.Usage
	switch u.Store {
	case "", "sqlite", "none":
		if u.DSN != "" {
			add("usage.dsn", "is only read with usage.store: postgres (the store is %q)", orDefault(u.Store, DefaultUsageStore))
		}
	case "postgres":
		if u.DSN == "" {
			add("usage.dsn", "usage.store: postgres needs a connection string (postgres://user:pass@host:5432/db)")
		}
	default:
		add("usage.store", "unknown store %q (want sqlite, postgres or none)", u.Store)
	}
	if u.QueueSize < 0 {
		add("usage.queue_size", "must not be negative; got %d", u.QueueSize)
	}
	if u.BatchSize < 0 {
		add("usage.batch_size", "must not be negative; got %d", u.BatchSize)
	}
	nonNegative("usage.flush_interval", u.FlushInterval, add)
	if u.Retention != 0 && u.Retention < MinUsageRetention {
		add("usage.retention", "must be 0 (keep every record) or at least %s (32 days: a monthly budget's spend is read from the records at start); got %s",
			MinUsageRetention, u.Retention)
	}
	for name, p := range c.Pricing {
		path := "pricing." + name
		if strings.TrimSpace(name) == "" {
			add("pricing", "a price needs a model name (provider/model or model)")
		}
		for field, v := range map[string]*float64{"input": &p.Input, "output": &p.Output, "cached_input": p.CachedInput,
			"cache_write_input": p.CacheWriteInput} {
			if v != nil && (*v < 0 || math.IsNaN(*v) || math.IsInf(*v, 0)) {
				add(path+"."+field, "must be a non-negative number of USD per million tokens; got %v", *v)
			}
		}
	}
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
