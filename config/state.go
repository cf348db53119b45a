package config

import (
	"net/url"
	"time"
)

// State says where shared state lives. Without state.redis.url Switchyard runs
// embedded: limits in this process's memory, keys and virtual models in data_dir,
// one replica. With it, every replica shares limits, keys, virtual models and
// admin breaker trips through Redis (package redisstate).
type State struct {
	// Redis is the shared store.
	Redis Redis `yaml:"redis"`
}

// Redis configures the shared store (Redis or Valkey: plain commands only).
type Redis struct {
	// URL is redis://[user:password@]host:port[/db] or rediss:// (TLS); empty is
	// the embedded mode. SWITCHYARD_REDIS_URL sets it when the file does not.
	URL Secret `yaml:"url"`
	// OnError is what limits do while Redis cannot answer: "allow" (the default)
	// decides with this replica's own in-memory counters, so calls keep flowing and
	// a limit holds per replica (at most N× across N replicas) until Redis is back;
	// "deny" refuses every limited call with 429 and a one-second Retry-After.
	OnError string `yaml:"on_error"`
	// Timeout bounds every Redis call (an admission check included).
	Timeout time.Duration `yaml:"timeout"`
	// ResyncInterval is how often a replica reloads the whole shared state, so a
	// change whose notification it missed is in force within it.
	ResyncInterval time.Duration `yaml:"resync_interval"`
	// Prefix starts every key and channel name, so that several deployments can
	// share one Redis.
	Prefix string `yaml:"prefix"`
}

// Shared-state defaults.
const (
	DefaultRedisOnError        = "allow"
	DefaultRedisTimeout        = 250 * time.Millisecond
	DefaultRedisResyncInterval = 10 * time.Second
	DefaultRedisPrefix         = "switchyard:"
)

// Enabled reports whether a Redis URL is set (shared mode).
func (r Redis) Enabled() bool { return r.URL != "" }

func applyStateDefaults(s *State) {
	r := &s.Redis
	if r.OnError == "" {
		r.OnError = DefaultRedisOnError
	}
	if r.Timeout == 0 {
		r.Timeout = DefaultRedisTimeout
	}
	if r.ResyncInterval == 0 {
		r.ResyncInterval = DefaultRedisResyncInterval
	}
	if r.Prefix == "" {
		r.Prefix = DefaultRedisPrefix
	}
}

func applyStateEnv(s *State, get func(string) string) {
	if v := get("SWITCHYARD_REDIS_URL"); v != "" && s.Redis.URL == "" {
		s.Redis.URL = Secret(v)
	}
}

func validateState(s State, add addFunc) {
	r := s.Redis
	if r.URL != "" {
		u, err := url.Parse(string(r.URL))
		switch {
		case err != nil:
			add("state.redis.url", "is not a URL (want redis://host:port or rediss://host:port)")
		case u.Scheme != "redis" && u.Scheme != "rediss":
			add("state.redis.url", "scheme %q is not redis:// or rediss://", u.Scheme)
		case u.Host == "":
			add("state.redis.url", "has no host (want redis://host:port)")
		}
	}
	if r.OnError != "" && r.OnError != "allow" && r.OnError != "deny" {
		add("state.redis.on_error", "must be allow or deny; got %q", r.OnError)
	}
	nonNegative("state.redis.timeout", r.Timeout, add)
	nonNegative("state.redis.resync_interval", r.ResyncInterval, add)
}
