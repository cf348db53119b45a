package server

import (
	"context"
	"github.com/switchyard/switchyard/internal/testutil"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/router"
)

// heldProvider is provider "up" serving model "m": every call blocks until the
// test lets it go, so that what happens while calls are in flight is deterministic.
// A stream sends one chunk at once, then one more per tick, and ends when release
// closes; a unary call answers when release closes. Both end with the context.
type heldProvider struct {
	started chan string // "chat" or "stream", as each call reaches the provider
	tick    chan struct{}
	release chan struct{}
	once    sync.Once
}

func newHeldProvider() *heldProvider {
	return &heldProvider{started: make(chan string, 16), tick: make(chan struct{}), release: make(chan struct{})}
}

func (p *heldProvider) letGo() { p.once.Do(func() { close(p.release) }) }

func (p *heldProvider) Name() string                             { return "up" }
func (p *heldProvider) Models(context.Context) ([]string, error) { return []string{"m"}, nil }

func (p *heldProvider) Chat(ctx context.Context, _ *providers.Request) (*pb.ChatCompletion, error) {
	p.started <- "chat"
	select {
	case <-p.release:
		return &pb.ChatCompletion{Id: "c1", Object: "chat.completion", Model: "m", Choices: []*pb.Choice{{
			Message: &pb.ChatMessage{Role: "assistant"}, FinishReason: proto.String("stop")}}}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *heldProvider) Stream(ctx context.Context, _ *providers.Request) (providers.Stream, error) {
	p.started <- "stream"
	return &heldStream{ctx: ctx, p: p}, nil
}

type heldStream struct {
	ctx  context.Context
	p    *heldProvider
	sent int
}

func (s *heldStream) Recv() (*pb.ChatCompletionChunk, error) {
	if s.sent > 0 {
		select {
		case <-s.p.tick:
		case <-s.p.release:
			return nil, io.EOF
		case <-s.ctx.Done():
			return nil, &providers.StreamError{Provider: "up", Kind: "cancelled", Reason: s.ctx.Err().Error()}
		}
	}
	s.sent++
	return &pb.ChatCompletionChunk{Id: "c1", Object: "chat.completion.chunk", Model: "m",
		Choices: []*pb.ChunkChoice{{Delta: &pb.ChatDelta{Content: proto.String("word ")}}}}, nil
}

func (s *heldStream) Close() error { return nil }

// running is a served Server on 127.0.0.1:0.
type running struct {
	srv      *Server
	p        *heldProvider
	http     string // host:port
	grpc     string
	logs     *testutil.LogBuffer
	served   chan error
	shutdown sync.Once
}

// serve starts a Server over a heldProvider; edit adjusts its Config.
func serve(t *testing.T, edit func(*Config)) *running {
	t.Helper()
	p := newHeldProvider()
	logs := &testutil.LogBuffer{}
	cfg := Config{Log: slog.New(slog.NewJSONHandler(logs, nil)), MaxBodyBytes: 8 << 20,
		Router: router.New(slog.New(slog.DiscardHandler), []router.Target{{Provider: p, Configured: []string{"m"}}}),
		Keys:   Keys{Master: "sk-master", Admin: "sk-admin"}, DrainTimeout: 10 * time.Second}
	if edit != nil {
		edit(&cfg)
	}
	srv, err := New(cfg)
	require.NoError(t, err)
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	r := &running{srv: srv, p: p, http: hl.Addr().String(), grpc: gl.Addr().String(), logs: logs, served: make(chan error, 1)}
	go func() { r.served <- srv.Serve(gl, hl) }()
	t.Cleanup(func() {
		p.letGo()
		r.stop()
		require.NoError(t, <-r.served)
	})
	return r
}

// stop shuts the server down once (tests may call it themselves first).
func (r *running) stop() { r.shutdown.Do(func() { r.srv.Shutdown(context.Background()) }) }

// dialGRPC connects a gRPC client to the server.
func (r *running) dialGRPC(t *testing.T) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(r.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

const chatJSON = `{"model":"up/m","messages":[{"role":"user","content":"hi"}]`
