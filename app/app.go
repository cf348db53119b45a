// Package app wires a configuration into a running Switchyard: providers, router,
// server and listeners. cmd/switchyard and the end-to-end tests use it alike.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/internal/heapfloor"
	"github.com/switchyard/switchyard/limits"
	"github.com/switchyard/switchyard/metrics"
	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/providers/anthropic"
	"github.com/switchyard/switchyard/providers/openai"
	"github.com/switchyard/switchyard/providers/simulator"
	"github.com/switchyard/switchyard/resilience"
	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/server"
	"github.com/switchyard/switchyard/store"
	"github.com/switchyard/switchyard/tracing"
	"github.com/switchyard/switchyard/usage"
)

// discoveryTimeout bounds model discovery at start.
const discoveryTimeout = 5 * time.Second

// App is a started Switchyard.
type App struct {
	log     *slog.Logger
	server  *server.Server
	grpcLis net.Listener
	httpLis net.Listener
	done    chan error
	stopBG  context.CancelFunc
	// stopFloor gives the garbage collector Go's own pacing back (heapfloor).
	stopFloor func()

	stopOnce sync.Once
	stopErr  error
	shared   *redisShared // nil: embedded mode

	ledger       *usage.Ledger // drained into its store at shutdown (app/usage.go)
	drainTimeout time.Duration
}

// Option configures Start.
type Option func(*options)

type options struct{ tracerProvider trace.TracerProvider }

// WithTracerProvider traces requests and upstream attempts with tp (default: none).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) { o.tracerProvider = tp }
}

// Start builds everything from cfg, binds the listeners and starts serving.
func Start(ctx context.Context, cfg *config.Config, log *slog.Logger, opts ...Option) (*App, error) {
	o := options{tracerProvider: tracing.Noop()}
	for _, opt := range opts {
		opt(&o)
	}
	tracer := o.tracerProvider.Tracer(tracing.Name)
	if err := checkExposure(cfg, log); err != nil {
		return nil, err
	}
	for _, w := range cfg.Warnings() {
		log.Warn(w)
	}
	m := metrics.New()
	shared, err := embeddedState(cfg)
	if err != nil {
		return nil, err
	}
	rs, err := openRedis(cfg, log, m)
	if err != nil {
		return nil, err
	}
	started := false
	defer func() {
		if !started {
			rs.close()
		}
	}()
	if rs != nil {
		shared = rs.state()
	}
	limiter := limits.New(shared.limits, nil)
	targets, err := buildTargets(cfg, log, m, limiter)
	if err != nil {
		return nil, err
	}
	routing := []router.Option{router.WithObserver(m)}
	if _, off := o.tracerProvider.(noop.TracerProvider); !off {
		routing = append(routing, router.WithTracer(tracer))
	}
	rt := router.New(log, targets, routing...)
	vms := make([]router.VirtualModel, 0, len(cfg.VirtualModels))
	for _, vm := range cfg.VirtualModels {
		vms = append(vms, router.FromConfig(cfg.Failover, vm, true))
	}
	if err := rt.SetVirtualModels(vms); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	st, err := store.Open(cfg.Server.DataDir)
	if err != nil {
		return nil, err
	}
	persist := st.Save
	if rs != nil {
		rs.follow(ctx, rt, cfg)
		persist = rs.vms.Persist
	} else if err := loadStored(rt, st, cfg, log); err != nil {
		return nil, err
	}
	vkeys, err := openKeys(ctx, shared, log)
	if err != nil {
		return nil, err
	}
	ledger, err := openLedger(ctx, cfg, log, m, rs.spend())
	if err != nil {
		return nil, err
	}
	infos := map[string]server.ProviderInfo{}
	for name, p := range cfg.Providers {
		infos[name] = server.ProviderInfo{Type: p.Type, BaseURL: providers.DisplayURL(p.BaseURL), EmbeddingModels: p.EmbeddingModels}
	}
	rt.Discover(ctx, discoveryTimeout)
	if len(rt.Models()) == 0 {
		log.Warn("no models available yet: requests will get 503 until a provider's discovery succeeds")
	}
	srv, err := server.New(server.Config{
		Log: log, Router: rt, MaxBodyBytes: cfg.Server.MaxBodyBytes, DrainTimeout: cfg.Server.DrainTimeout,
		DrainDelay:   cfg.Server.DrainDelay,
		WriteTimeout: cfg.Server.StreamIdleTimeout, ReadTimeout: cfg.Server.ReadTimeout, IdleTimeout: cfg.Server.IdleTimeout,
		MaxConnectionAge: cfg.Server.MaxConnectionAge, MaxConnectionAgeGrace: cfg.Server.MaxConnectionAgeGrace,
		Failover: cfg.Failover, Providers: infos, Targets: targets,
		PersistVirtualModels: persist, Metrics: m, Tracer: tracer,
		Keys:        server.Keys{Master: string(cfg.Server.MasterKey), Admin: string(cfg.Server.AdminKey)},
		VirtualKeys: vkeys, Limiter: limiter, KeyMetrics: cfg.Server.KeyMetricsOn(),
		Breakers: rs.breakers(), SharedReady: rs.ready(),
		Ledger: ledger,
	})
	if err != nil {
		_ = ledger.Close(ctx)
		return nil, err
	}
	var lc net.ListenConfig
	grpcLis, err := lc.Listen(ctx, "tcp", cfg.Server.GRPCAddr)
	if err != nil {
		_ = ledger.Close(ctx)
		return nil, fmt.Errorf("listen gRPC on %s: %w", cfg.Server.GRPCAddr, err)
	}
	httpLis, err := lc.Listen(ctx, "tcp", cfg.Server.HTTPAddr)
	if err != nil {
		grpcLis.Close()
		_ = ledger.Close(ctx)
		return nil, fmt.Errorf("listen HTTP on %s: %w", cfg.Server.HTTPAddr, err)
	}
	bg, stopBG := context.WithCancel(context.Background())
	go rt.Recheck(bg, cfg.Server.RecheckInterval, discoveryTimeout)
	a := &App{log: log, server: srv, grpcLis: grpcLis, httpLis: httpLis, done: make(chan error, 1), stopBG: stopBG,
		ledger: ledger, drainTimeout: cfg.Server.DrainTimeout}
	a.shared, started = rs, true
	a.stopFloor = heapfloor.Start(cfg.Server.HeapFloor(), os.Getenv)
	go func() { a.done <- srv.Serve(grpcLis, httpLis) }()
	models := rt.Models()
	ids := make([]string, 0, len(models))
	for _, m := range models {
		ids = append(ids, m.ID)
	}
	log.Info("Switchyard is serving", "http", "http://"+httpLis.Addr().String(), "grpc", grpcLis.Addr().String(),
		"providers", len(targets), "models", ids)
	return a, nil
}

// HTTPAddr is the bound REST address.
func (a *App) HTTPAddr() string { return a.httpLis.Addr().String() }

// GRPCAddr is the bound gRPC address.
func (a *App) GRPCAddr() string { return a.grpcLis.Addr().String() }

// Done yields the serving error (nil after a clean shutdown).
func (a *App) Done() <-chan error { return a.done }

// EndDrainDelay ends Shutdown's server.drain_delay now (a second signal).
func (a *App) EndDrainDelay() { a.server.EndDrainDelay() }

// Shutdown drains and stops the server (after server.drain_delay); later calls
// return the first result.
func (a *App) Shutdown(ctx context.Context) error {
	a.stopOnce.Do(func() {
		a.stopBG()
		a.server.Shutdown(ctx)
		a.stopErr = <-a.done
		a.stopFloor()
		a.shared.close()
		a.closeLedger()
	})
	return a.stopErr
}

func buildTargets(cfg *config.Config, log *slog.Logger, m *metrics.Metrics, lim *limits.Limiter) ([]router.Target, error) {
	names := make([]string, 0, len(cfg.Providers))
	for name := range cfg.Providers {
		names = append(names, name)
	}
	slices.Sort(names)
	var targets []router.Target
	for _, name := range names {
		p := cfg.Providers[name]
		var prov providers.Provider
		limiter := targetLimiter(lim, name, p)
		quota := limits.NewQuota(name, limiter, nil) // tightened by the upstream's rate-limit headers
		switch p.Type {
		case "simulator":
			prov = simulator.New(simulator.Config{Name: name, TimeToFirstToken: p.Simulator.TimeToFirstToken,
				EmbeddingModels: p.EmbeddingModels, Dimensions: p.Simulator.Dimensions,
				TokenDelay: p.Simulator.TokenDelay, Tokens: p.Simulator.Tokens, Models: p.Models})
			if name == config.SimulatorName && len(cfg.Providers) == 1 {
				log.Warn("no providers configured: serving the built-in simulator (deterministic text, no network). " +
					"Add real providers with OPENAI_API_KEY (+ OPENAI_BASE_URL), ANTHROPIC_API_KEY (+ ANTHROPIC_BASE_URL), " +
					"OLLAMA_BASE_URL, VLLM_BASE_URL, " +
					"or a providers: block in a config file passed with --config")
			}
		case "anthropic":
			prov = anthropic.New(anthropic.Config{Name: name, BaseURL: p.BaseURL, APIKey: string(p.APIKey), Headers: p.Headers,
				DefaultMaxTokens: p.DefaultMaxTokens, ConnectTimeout: p.ConnectTimeout, ResponseHeaderTimeout: p.ResponseHeaderTimeout,
				Timeout: p.Timeout, StreamIdleTimeout: p.StreamIdleTimeout,
				FirstTokenTimeout: config.ResolveFirstTokenTimeout(cfg.Resilience, p.Resilience), Log: log,
				OnQuota: quota.Note})
			limiter = quota
		default:
			var az *openai.Azure
			if p.Type == "azure" {
				az = &openai.Azure{APIVersion: p.APIVersion, Deployments: p.Deployments, BearerToken: string(p.BearerToken)}
			}
			prov = openai.New(openai.Config{Name: name, BaseURL: p.BaseURL, APIKey: string(p.APIKey), Headers: p.Headers, Azure: az,
				ConnectTimeout: p.ConnectTimeout, ResponseHeaderTimeout: p.ResponseHeaderTimeout, Timeout: p.Timeout,
				StreamIdleTimeout: p.StreamIdleTimeout, FirstTokenTimeout: config.ResolveFirstTokenTimeout(cfg.Resilience, p.Resilience),
				Log: log, OnQuota: quota.Note})
			limiter = quota
		}
		retry, breaker := config.ResolveResilience(cfg.Resilience, p.Resilience)
		percent, minConc := config.ResolveBudget(cfg.Resilience, p.Resilience)
		guard := resilience.NewGuard(resilience.GuardConfig{Provider: name, Retry: retry, Breaker: breaker,
			Budget: resilience.NewBudget(percent, minConc), Observer: router.BreakerLog(log, m)})
		log.Info("provider configured", "provider", name, "type", p.Type, "base_url", providers.DisplayURL(p.BaseURL),
			"configured_models", len(p.Models), "max_retries", retry.MaxRetries, "breaker", breaker.Active(),
			"breaker_scope", string(breaker.Scope))
		configured := slices.Concat(p.Models, p.EmbeddingModels)
		targets = append(targets, router.Target{Provider: prov, Configured: configured, Guard: guard, Limiter: limiter})
	}
	if len(targets) == 0 {
		return nil, errors.New("no usable provider: configure at least one provider Switchyard supports")
	}
	return targets, nil
}

// loadStored adds the virtual models created through the admin API in an earlier
// run. One that the config file now defines, or that no longer validates, is
// skipped with a warning (and dropped from the store at the next change).
func loadStored(rt *router.Router, st *store.VirtualModels, cfg *config.Config, log *slog.Logger) error {
	stored, err := st.Load()
	if err != nil {
		return fmt.Errorf("virtual model store: %w", err)
	}
	for _, spec := range stored {
		vm := router.FromConfig(cfg.Failover, spec, false)
		if err := rt.UpsertVirtualModel(vm, nil); err != nil {
			log.Warn("skipping a stored virtual model", "source", spec.Source, "error", err.Error(), "store", st.Path())
		}
	}
	if len(stored) > 0 {
		log.Info("virtual models restored from the store", "count", len(stored), "store", st.Path())
	}
	return nil
}

// checkExposure refuses to serve beyond loopback without a master key, unless
// server.allow_unauthenticated says so.
func checkExposure(cfg *config.Config, log *slog.Logger) error {
	if err := cfg.Server.CheckAddrs(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	for _, k := range []struct{ key, env, yaml, what, name string }{
		{string(cfg.Server.MasterKey), "SWITCHYARD_MASTER_KEY", "server.master_key", "inference", "a master"},
		{string(cfg.Server.AdminKey), "SWITCHYARD_ADMIN_KEY", "server.admin_key", "admin", "an admin"},
	} {
		if k.key != "" {
			continue
		}
		for _, addr := range []string{cfg.Server.HTTPAddr, cfg.Server.GRPCAddr} {
			if isLoopback(addr) {
				continue
			}
			if !cfg.Server.AllowUnauthenticated {
				return fmt.Errorf("refusing to listen on %s without %s key: set %s (or %s), bind a loopback "+
					"address, or set server.allow_unauthenticated: true", addr, k.name, k.env, k.yaml)
			}
			log.Warn("SERVING WITHOUT AUTHENTICATION on a non-loopback address (server.allow_unauthenticated is set)",
				"addr", addr, "api", k.what)
		}
		log.Warn("no "+k.what+" key set: "+k.what+" calls are not authenticated", "set", k.env)
	}
	return nil
}

func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
