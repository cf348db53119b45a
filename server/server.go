// Package server serves Switchyard's gRPC services and the OpenAI-compatible REST
// surface (grpc-gateway) in front of them, with health, readiness and graceful
// shutdown. REST calls reach the gRPC server over an in-memory connection, so both
// surfaces pass the same interceptor chain.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/test/bufconn"

	"github.com/switchyard/switchyard/config"
	adminpb "github.com/switchyard/switchyard/gen/switchyard/admin/v1"
	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/codec"
	"github.com/switchyard/switchyard/keys"
	"github.com/switchyard/switchyard/limits"
	"github.com/switchyard/switchyard/metrics"
	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/tracing"
	"github.com/switchyard/switchyard/usage"
)

// Config is what a Server needs.
type Config struct {
	// Log receives one line per call and lifecycle events.
	Log *slog.Logger
	// Router resolves models and calls providers.
	Router *router.Router
	// Keys are the bearer tokens calls must carry.
	Keys Keys
	// VirtualKeys are the virtual keys inference calls may carry instead of the
	// master key; nil: none. The admin API's key RPCs manage them.
	VirtualKeys *keys.Registry
	// Limiter enforces virtual keys' limits; nil: not enforced.
	Limiter *limits.Limiter
	// KeyMetrics counts requests per virtual key (label: the key's id).
	KeyMetrics bool
	// KeyBudget, when set, is asked before a virtual key's call is admitted; an
	// error (a status) refuses the call (the usage ledger's budgets).
	KeyBudget func(context.Context, keys.Key) error
	// Ledger records every inference call's usage and cost (nil: none); with its
	// running spend and no KeyBudget, it enforces virtual keys' budget_usd.
	Ledger *usage.Ledger
	// MaxBodyBytes limits REST request bodies.
	MaxBodyBytes int64
	// DrainTimeout is the drain deadline for in-flight calls.
	DrainTimeout time.Duration
	// DrainDelay is how long both listeners keep accepting and serving new calls
	// after Shutdown has turned readiness off, so that load balancers see the 503 /
	// NOT_SERVING and stop sending before the listeners close. Zero: they close at once.
	DrainDelay time.Duration
	// Failover is the global failover block virtual models made through the admin
	// API inherit.
	Failover config.Failover
	// PersistVirtualModels stores the API-managed virtual models; nil keeps them in memory.
	PersistVirtualModels func([]config.VirtualModel) error
	// Providers describes each provider for the admin API (no secrets).
	Providers map[string]ProviderInfo
	// Targets are the router's targets (providers with their guards), for
	// passthrough (/p/{provider}/...) and for /v1/models to tell embedding models.
	Targets []router.Target
	// Tracer makes the server spans; nil traces nothing.
	Tracer trace.Tracer
	// Metrics receives request metrics and serves /metrics; nil makes a private one.
	Metrics *metrics.Metrics
	// WriteTimeout bounds each write to a streaming client: a client that stops
	// reading is dropped instead of pinning an upstream connection.
	WriteTimeout time.Duration
	// ReadTimeout bounds reading a whole REST request, headers and body; a slower
	// request gets 408 (or, stuck in its headers, a close) and its connection
	// closed. It ends once the body is read: long answers and streams are not cut.
	// Zero: only headers are bounded (30s).
	ReadTimeout time.Duration
	// IdleTimeout closes REST keep-alive connections and gRPC connections that carry
	// no request for this long. Zero: 2 minutes (REST), unbounded (gRPC).
	IdleTimeout time.Duration
	// MaxConnectionAge sends a gRPC connection GOAWAY after it has lived this long
	// (grpc-go adds ±10 % jitter), so that clients holding one connection for hours
	// rebalance across replicas; MaxConnectionAgeGrace then bounds the calls still on
	// it. Zero: unbounded (no forced reconnect).
	MaxConnectionAge, MaxConnectionAgeGrace time.Duration
	// Breakers shares admin breaker trips and resets with the other replicas
	// (nil: this replica only).
	Breakers BreakerSync
	// SharedReady is the shared state's readiness, added to the server's own
	// (nil: embedded mode, nothing to add).
	SharedReady func() (bool, string)
}

// headerTimeout bounds reading a REST request's headers (slowloris).
const headerTimeout = 30 * time.Second

// defaultIdleTimeout is the REST keep-alive idle bound when Config.IdleTimeout is zero.
const defaultIdleTimeout = 2 * time.Minute

// streamWorkers is how many goroutines serve gRPC calls, reused from call to call
// (calls beyond them get a goroutine each, as without workers). A reused goroutine
// keeps the stack a call grew; a new one grows it again, copying it each time.
// Measured with the load harness (gRPC unary CPU per request): 32 workers cost
// 12-15 % less than 2 (one per core) at 8, 32 and 128 concurrent calls, and 128
// workers no less than 32.
const streamWorkers = 32

// MaxConcurrentStreams bounds the calls one gRPC connection has open at once;
// a client's further calls wait in its own transport for one to end (grpc-go's
// clients do). A thousand streaming calls of minutes each is far beyond one
// service's connection.
const MaxConcurrentStreams = 1000

// MaxHeaderListSize bounds a gRPC call's metadata (names and values, uncompressed),
// as REST's headers are bounded: a key, a request id, trace context and
// Idempotency-Key take well under a kilobyte.
const MaxHeaderListSize = 64 << 10

// Server is a running (or ready to run) Switchyard.
type Server struct {
	cfg Config
	// grpc serves the gRPC listener; gateway serves the in-memory listener REST
	// calls reach through grpc-gateway, so that it outlives the REST drain.
	grpc     *grpc.Server
	gateway  *grpc.Server
	health   *health.Server
	http     *http.Server
	internal *bufconn.Listener
	conn     *grpc.ClientConn
	ready    atomic.Bool
	stopping atomic.Bool
	drain    *drainer
	// readyNow is the readiness /health/ready answers, the gRPC health
	// service's too (followHealth); stopHealth ends the following.
	readyNow   func() (bool, string)
	stopHealth chan struct{}
	// endDelay, closed by EndDrainDelay, ends Shutdown's drain delay early.
	endDelay     chan struct{}
	endDelayOnce sync.Once
}

// New builds the gRPC server, the in-memory REST→gRPC connection and the REST handler.
func New(cfg Config) (*Server, error) {
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New()
	}
	cfg.Metrics.SetKnown(cfg.Router.Known)
	cfg.Metrics.WatchBreakers(cfg.Router.Breakers)
	if cfg.Tracer == nil {
		cfg.Tracer = tracing.Noop().Tracer(tracing.Name)
	}
	drain := newDrainer()
	auth := authorizer{keys: cfg.Keys, virtual: cfg.VirtualKeys}
	if cfg.KeyBudget == nil && cfg.Ledger.Spend() != nil {
		cfg.KeyBudget = budgetCheck(cfg.Ledger.Spend())
	}
	adm := &admissionStage{log: cfg.Log, auth: auth, router: cfg.Router, limiter: cfg.Limiter, budget: cfg.KeyBudget}
	if cfg.VirtualKeys != nil && cfg.KeyMetrics {
		adm.keyM = metrics.NewKeyMetrics(cfg.Metrics)
	}
	calls := chain{log: cfg.Log, m: cfg.Metrics, tracer: cfg.Tracer, adm: adm, drain: drain,
		ledger: cfg.Ledger, virtual: isVirtual(cfg.Router)}
	unary, stream := interceptors(calls)
	chat := &chatService{log: cfg.Log, router: cfg.Router, metrics: cfg.Metrics, writeTimeout: cfg.WriteTimeout}
	targets := map[string]router.Target{}
	for _, t := range cfg.Targets {
		targets[t.Provider.Name()] = t
	}
	models := &modelService{log: cfg.Log, router: cfg.Router, embeds: embedsRule(targets, cfg.Providers)}
	embed := &embeddingService{log: cfg.Log, router: cfg.Router, providers: cfg.Providers}
	pass := &passthroughService{log: cfg.Log, router: cfg.Router, targets: targets, providers: cfg.Providers}
	admin := &adminService{log: cfg.Log, router: cfg.Router, failover: cfg.Failover,
		persist: cfg.PersistVirtualModels, providers: cfg.Providers, breakers: cfg.Breakers, keys: cfg.VirtualKeys, ledger: cfg.Ledger}
	register := func(gs *grpc.Server) {
		gs.RegisterService(decodeErrorsAsInvalidArgument(&pb.ChatService_ServiceDesc, cfg.Log), chat)
		gs.RegisterService(decodeErrorsAsInvalidArgument(&pb.ModelService_ServiceDesc, cfg.Log), models)
		gs.RegisterService(decodeErrorsAsInvalidArgument(&pb.EmbeddingService_ServiceDesc, cfg.Log), embed)
		gs.RegisterService(decodeErrorsAsInvalidArgument(&adminpb.AdminService_ServiceDesc, cfg.Log), admin)
	}
	// Both servers: the chain; protobuf as always, encoded by generated code instead
	// of reflection (measured: see README); write buffers shared between connections.
	opts := []grpc.ServerOption{grpc.UnaryInterceptor(unary), grpc.StreamInterceptor(stream),
		grpc.ForceServerCodecV2(codec.Codec{}), grpc.SharedWriteBuffer(true), experimental.BufferPool(codec.Buffers)}
	gs := grpc.NewServer(slices.Concat(opts, []grpc.ServerOption{
		// Clients (ours included) ping every 30s; allow it, instead of answering too_many_pings.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 15 * time.Second, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: cfg.IdleTimeout,
			MaxConnectionAge: cfg.MaxConnectionAge, MaxConnectionAgeGrace: cfg.MaxConnectionAgeGrace}),
		// Measured with the load harness: reusing stream goroutines and sharing write
		// buffers between connections makes gRPC calls cheaper.
		grpc.NumStreamWorkers(streamWorkers),
		// One connection's share (grpc-go's defaults are no bound on streams and
		// 16 MiB of metadata each, before any key is checked: a client that opened
		// 150,000 streams it never sent a message on held 1.7 GB).
		grpc.MaxConcurrentStreams(MaxConcurrentStreams), grpc.MaxHeaderListSize(MaxHeaderListSize),
		// A call with no good key is refused as its headers arrive (keyTap).
		grpc.InTapHandle(calls.keyTap())})...)
	register(gs)
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING) // until Serve finds it ready
	healthpb.RegisterHealthServer(gs, hs)
	reflection.Register(gs)
	// The in-process connection carries REST bodies the front has bounded
	// (max_body_bytes): grpc-go's own 4 MiB bound would refuse a body the front
	// took, as a 429 (ResourceExhausted).
	msgLimit := int(max(64<<20, 2*cfg.MaxBodyBytes))
	gw := grpc.NewServer(slices.Concat(opts, []grpc.ServerOption{grpc.MaxRecvMsgSize(msgLimit)})...)
	register(gw)

	s := &Server{cfg: cfg, grpc: gs, gateway: gw, health: hs, internal: bufconn.Listen(1 << 20), drain: drain,
		stopHealth: make(chan struct{}), endDelay: make(chan struct{})}
	s.readyNow = readyWith(s.readiness, cfg.SharedReady)
	conn, err := grpc.NewClient("passthrough:///switchyard-internal",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return s.internal.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(msgLimit), grpc.MaxCallSendMsgSize(msgLimit)))
	if err != nil {
		return nil, err
	}
	s.conn = conn
	handler, err := newREST(context.Background(), conn, restOptions{in: inProcess{unary: unary, stream: stream, refuse: calls.refuse, chat: chat, embed: embed, pass: pass}, auth: auth, metrics: cfg.Metrics.Handler(),
		writeTimeout: cfg.WriteTimeout, readTimeout: cfg.ReadTimeout, log: cfg.Log, maxBodyBytes: cfg.MaxBodyBytes, ready: s.readyNow})
	if err != nil {
		return nil, err
	}
	s.http = &http.Server{Handler: handler, ReadHeaderTimeout: headerTimeout, IdleTimeout: defaultIdleTimeout,
		// The whole request, from its first byte; net/http lifts it once the body is
		// read (TestAnswersOutliveTheReadTimeout).
		ReadTimeout: cfg.ReadTimeout}
	if cfg.ReadTimeout > 0 && cfg.ReadTimeout < headerTimeout {
		s.http.ReadHeaderTimeout = cfg.ReadTimeout
	}
	if cfg.IdleTimeout > 0 {
		s.http.IdleTimeout = cfg.IdleTimeout
	}
	return s, nil
}

// healthEvery is how often the gRPC health service's status is brought in
// line with readiness.
const healthEvery = time.Second

// followHealth keeps the gRPC health service's status ("" and every service)
// what /health/ready answers: SERVING when ready, NOT_SERVING when not (no
// model available, shared state never loaded), so that a gRPC load balancer
// or probe routes as an HTTP one does. Shutdown ends it (health.Shutdown sets
// NOT_SERVING for good).
func (s *Server) followHealth() {
	t := time.NewTicker(healthEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.syncHealth()
		case <-s.stopHealth:
			return
		}
	}
}

// syncHealth sets the gRPC health status from readiness now.
func (s *Server) syncHealth() {
	status := healthpb.HealthCheckResponse_NOT_SERVING
	if ok, _ := s.readyNow(); ok {
		status = healthpb.HealthCheckResponse_SERVING
	}
	s.health.SetServingStatus("", status) // a no-op once Shutdown ran
}

func (s *Server) readiness() (bool, string) {
	if !s.ready.Load() {
		return false, "shutting down or not started"
	}
	n := len(s.cfg.Router.Models())
	if n == 0 {
		reason := "degraded: no models available"
		for _, p := range s.cfg.Router.Providers() {
			if p.LastError != "" {
				reason += "; " + p.Name + ": " + p.LastError
			}
		}
		return false, reason
	}
	return true, fmt.Sprintf("%d models", n)
}

// Serve serves gRPC on grpcLis and REST on httpLis until Shutdown; it returns the
// first serving error.
func (s *Server) Serve(grpcLis, httpLis net.Listener) error {
	// Ready before the accept loops start (the listeners are bound: a client
	// that connects waits in their queue), so that no one asks the gRPC
	// health service before it has its status.
	s.ready.Store(true)
	if s.stopping.Load() { // a Shutdown that came first (or meanwhile) keeps readiness off
		s.ready.Store(false)
	}
	s.syncHealth()
	errc := make(chan error, 3)
	go func() { errc <- s.gateway.Serve(s.internal) }()
	go func() { errc <- s.grpc.Serve(grpcLis) }()
	go func() {
		err := s.http.Serve(httpLis)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		errc <- err
	}()
	go s.followHealth()
	var first error
	for range 3 {
		if err := <-errc; err != nil && first == nil && !errors.Is(err, grpc.ErrServerStopped) {
			first = err
			s.EndDrainDelay() // nothing to wait for: a listener has failed
			go s.Shutdown(context.Background())
		}
	}
	return first
}

// Shutdown drains in order: readiness off (/health/ready 503, gRPC health
// NOT_SERVING); both listeners go on accepting and serving new calls for the drain
// delay (or until EndDrainDelay or ctx ends it), so that load balancers see it; both
// listeners stop accepting at once (gRPC clients get GOAWAY); in-flight calls run on
// up to the drain deadline; calls
// still running then are ended with an answer (REST 503, gRPC Unavailable, a
// stream's in-band error or final status) and get answerGrace to write it; then
// everything closes.
func (s *Server) Shutdown(ctx context.Context) {
	if s.stopping.Swap(true) {
		return
	}
	s.ready.Store(false)
	close(s.stopHealth)
	s.health.Shutdown()
	s.waitDrainDelay(ctx)
	if s.cfg.DrainTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.DrainTimeout)
		defer cancel()
	}
	// hard ends the REST drain once the grace after the deadline is over.
	hard, stopHard := context.WithCancel(context.Background())
	defer stopHard()
	httpDone, grpcDone := make(chan struct{}), make(chan struct{})
	go func() { _ = s.http.Shutdown(hard); close(httpDone) }()
	go func() { s.grpc.GracefulStop(); close(grpcDone) }()
	if !waitAll(ctx.Done(), httpDone, grpcDone) {
		s.drain.cancelAll()
		grace, cancel := context.WithTimeout(context.Background(), answerGrace)
		waitAll(grace.Done(), httpDone, grpcDone)
		cancel()
	}
	stopHard()
	s.grpc.Stop()
	_ = s.http.Close()
	<-httpDone
	// REST calls are over: the in-memory gRPC server they used can go.
	s.gateway.Stop()
	_ = s.conn.Close()
}

// EndDrainDelay ends Shutdown's drain delay now, or before it starts (a second
// signal): the listeners close and the drain begins. Later calls do nothing.
func (s *Server) EndDrainDelay() { s.endDelayOnce.Do(func() { close(s.endDelay) }) }

// waitDrainDelay serves on, not ready, until the drain delay is over,
// EndDrainDelay is called or ctx ends.
func (s *Server) waitDrainDelay(ctx context.Context) {
	if s.cfg.DrainDelay <= 0 {
		return
	}
	t := time.NewTimer(s.cfg.DrainDelay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.endDelay:
	case <-ctx.Done():
	}
}

// waitAll waits for every done channel to close; false if stop closed first.
func waitAll(stop <-chan struct{}, done ...chan struct{}) bool {
	for _, d := range done {
		select {
		case <-d:
		case <-stop:
			return false
		}
	}
	return true
}
