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
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/test/bufconn"

	"github.com/switchyard/switchyard/config"
	adminpb "github.com/switchyard/switchyard/gen/switchyard/admin/v1"
	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/codec"
	"github.com/switchyard/switchyard/metrics"
	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/tracing"
)

// Config is what a Server needs.
type Config struct {
	// Log receives one line per call and lifecycle events.
	Log *slog.Logger
	// Router resolves models and calls providers.
	Router *router.Router
	// Keys are the bearer tokens calls must carry.
	Keys Keys
	// MaxBodyBytes limits REST request bodies.
	MaxBodyBytes int64
	// DrainTimeout is the drain deadline for in-flight calls.
	DrainTimeout time.Duration
	// Failover is the global failover block virtual models made through the admin
	// API inherit.
	Failover config.Failover
	// PersistVirtualModels stores the API-managed virtual models; nil keeps them in memory.
	PersistVirtualModels func([]config.VirtualModel) error
	// Providers describes each provider for the admin API (no secrets).
	Providers map[string]ProviderInfo
	// Tracer makes the server spans; nil traces nothing.
	Tracer trace.Tracer
	// Metrics receives request metrics and serves /metrics; nil makes a private one.
	Metrics *metrics.Metrics
	// WriteTimeout bounds each write to a streaming client: a client that stops
	// reading is dropped instead of pinning an upstream connection.
	WriteTimeout time.Duration
}

// streamWorkers is how many goroutines serve gRPC calls, reused from call to call
// (calls beyond them get a goroutine each, as without workers). A reused goroutine
// keeps the stack a call grew; a new one grows it again, copying it each time.
// Measured with the load harness (gRPC unary CPU per request): 32 workers cost
// 12-15 % less than 2 (one per core) at 8, 32 and 128 concurrent calls, and 128
// workers no less than 32.
const streamWorkers = 32

// Server is a running (or ready to run) Switchyard.
type Server struct {
	cfg      Config
	grpc     *grpc.Server
	health   *health.Server
	http     *http.Server
	internal *bufconn.Listener
	conn     *grpc.ClientConn
	ready    atomic.Bool
	drain    *drainer
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
	unary, stream := interceptors(cfg.Log, cfg.Metrics, cfg.Tracer, cfg.Keys)
	gs := grpc.NewServer(grpc.UnaryInterceptor(unary), grpc.StreamInterceptor(stream),
		// Clients (ours included) ping every 30s; allow it, instead of answering too_many_pings.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 15 * time.Second, PermitWithoutStream: true}),
		// Measured with the load harness: reusing stream goroutines and sharing write
		// buffers between connections makes gRPC calls cheaper.
		grpc.NumStreamWorkers(streamWorkers), grpc.SharedWriteBuffer(true),
		// protobuf as always, encoded by generated code instead of reflection (measured: see README).
		grpc.ForceServerCodecV2(codec.Codec{}))
	chat := &chatService{log: cfg.Log, router: cfg.Router, metrics: cfg.Metrics, writeTimeout: cfg.WriteTimeout}
	pb.RegisterChatServiceServer(gs, chat)
	pb.RegisterModelServiceServer(gs, &modelService{log: cfg.Log, router: cfg.Router})
	adminpb.RegisterAdminServiceServer(gs, &adminService{log: cfg.Log, router: cfg.Router, failover: cfg.Failover,
		persist: cfg.PersistVirtualModels, providers: cfg.Providers})
	hs := health.NewServer()
	healthpb.RegisterHealthServer(gs, hs)
	reflection.Register(gs)

	s := &Server{cfg: cfg, grpc: gs, health: hs, internal: bufconn.Listen(1 << 20), drain: newDrainer()}
	conn, err := grpc.NewClient("passthrough:///switchyard-internal",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return s.internal.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		return nil, err
	}
	s.conn = conn
	handler, err := newREST(context.Background(), conn, restOptions{in: inProcess{unary: unary, stream: stream, chat: chat}, drain: s.drain, metrics: cfg.Metrics.Handler(), writeTimeout: cfg.WriteTimeout, log: cfg.Log, maxBodyBytes: cfg.MaxBodyBytes, ready: s.readiness})
	if err != nil {
		return nil, err
	}
	s.http = &http.Server{Handler: handler, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}
	return s, nil
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
	errc := make(chan error, 3)
	go func() { errc <- s.grpc.Serve(s.internal) }()
	go func() { errc <- s.grpc.Serve(grpcLis) }()
	go func() {
		err := s.http.Serve(httpLis)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		errc <- err
	}()
	s.ready.Store(true)
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	var first error
	for range 3 {
		if err := <-errc; err != nil && first == nil && !errors.Is(err, grpc.ErrServerStopped) {
			first = err
			go s.Shutdown(context.Background())
		}
	}
	return first
}

// Shutdown drains in order: readiness off, stop accepting, wait for in-flight calls
// up to the drain deadline, then close everything.
func (s *Server) Shutdown(ctx context.Context) {
	if !s.ready.Swap(false) && s.conn == nil {
		return
	}
	s.health.Shutdown()
	if s.cfg.DrainTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.DrainTimeout)
		defer cancel()
	}
	// Streams still open at the deadline end with the in-band error, not a cut.
	stop := context.AfterFunc(ctx, s.drain.cancelAll)
	defer stop()
	if err := s.http.Shutdown(ctx); err != nil {
		s.drain.wait(time.Second) // let cancelled streams write their final event
	}
	done := make(chan struct{})
	go func() { s.grpc.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		s.grpc.Stop()
	}
	_ = s.http.Close()
	_ = s.conn.Close()
}
