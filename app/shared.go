package app

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/keys"
	"github.com/switchyard/switchyard/metrics"
	"github.com/switchyard/switchyard/redisstate"
	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/server"
	"github.com/switchyard/switchyard/store"
	"github.com/switchyard/switchyard/usage"
)

// redisShared is the shared state of several replicas (state.redis.url): limits,
// keys, virtual models and admin breaker changes in Redis. Nil in embedded mode.
type redisShared struct {
	client *redisstate.Client
	limits *redisstate.Limits
	keys   *redisstate.Keys
	vms    *redisstate.VirtualModels
	brk    *redisstate.Breakers
	sp     *redisstate.Spend
	stop   func()
}

// openRedis connects to state.redis.url (lazily: a Redis down at start is an
// outage like any other) and says which mode is in force; nil in embedded mode.
func openRedis(cfg *config.Config, log *slog.Logger, m *metrics.Metrics) (*redisShared, error) {
	r := cfg.State.Redis
	if !r.Enabled() {
		log.Warn("state: EMBEDDED mode (no state.redis.url): limits are counted PER PROCESS, keys and virtual models "+
			"live in data_dir; run ONE replica, or set state.redis.url so that limits and admin changes hold across replicas",
			"data_dir", cfg.Server.DataDir)
		return nil, nil
	}
	c, err := redisstate.Open(redisstate.Config{URL: string(r.URL), OnError: r.OnError, Timeout: r.Timeout,
		ResyncInterval: r.ResyncInterval, Prefix: r.Prefix, Log: log, Registerer: m.Registry()})
	if err != nil {
		return nil, err
	}
	log.Info("state: SHARED mode (Redis): limits, virtual keys, API-made virtual models and admin breaker trips/resets "+
		"are shared by every replica; breaker failure counting stays per replica",
		"on_error", r.OnError, "timeout", r.Timeout.String(), "resync_interval", r.ResyncInterval.String(), "prefix", r.Prefix)
	for _, name := range []string{keys.FileName, store.FileName} {
		if _, err := os.Stat(filepath.Join(cfg.Server.DataDir, name)); err == nil {
			log.Warn("state: shared mode ignores the embedded state file in data_dir (keys and virtual models come from Redis); "+
				"recreate what it holds through the admin API", "file", filepath.Join(cfg.Server.DataDir, name))
		}
	}
	return &redisShared{client: c, limits: redisstate.NewLimits(c), keys: redisstate.NewKeys(c)}, nil
}

// spend is where budgets' running totals are kept: Redis in shared mode, nil
// (this process's memory) in embedded mode.
func (s *redisShared) spend() usage.Totals {
	if s == nil {
		return nil
	}
	s.sp = redisstate.NewSpend(s.client)
	return s.sp
}

// state is the limits backend and key store the rest of the app uses.
func (s *redisShared) state() state { return state{limits: s.limits, keys: s.keys} }

// follow makes rt's API-made virtual models and admin breaker changes the shared
// ones, loads the shared state once (bounded by ctx) and follows it.
func (s *redisShared) follow(ctx context.Context, rt *router.Router, cfg *config.Config) {
	s.vms = redisstate.NewVirtualModels(s.client, rt, cfg.Failover)
	s.brk = redisstate.NewBreakers(s.client, rt)
	s.stop = s.client.Start(ctx)
}

// breakers is the server's BreakerSync (nil in embedded mode).
func (s *redisShared) breakers() server.BreakerSync {
	if s == nil {
		return nil
	}
	return s.brk
}

// ready is the server's SharedReady (nil in embedded mode).
func (s *redisShared) ready() func() (bool, string) {
	if s == nil {
		return nil
	}
	return s.client.Ready
}

// close stops following and closes the connections.
func (s *redisShared) close() {
	if s == nil {
		return
	}
	if s.stop != nil {
		s.stop()
	}
	if s.sp != nil {
		s.sp.Close() // what the last requests spent, before the client goes
	}
	_ = s.client.Close()
}
