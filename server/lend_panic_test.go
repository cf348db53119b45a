package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/bufpool"
	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/router"
)

// probeProvider: the fast one answers at once; the slow one waits for its
// context and, from its second call on, reports whether the buffer its request
// was lent is still lent to it once the test says the call is over.
type probeProvider struct {
	name   string
	slow   bool
	calls  atomic.Int32
	seen   chan struct{}
	check  chan struct{}
	result chan bool
}

func (p *probeProvider) Name() string                             { return p.name }
func (p *probeProvider) Models(context.Context) ([]string, error) { return []string{"m"}, nil }
func (p *probeProvider) Stream(context.Context, *providers.Request) (providers.Stream, error) {
	return nil, fmt.Errorf("no")
}

func (p *probeProvider) Chat(ctx context.Context, req *providers.Request) (*pb.ChatCompletion, error) {
	if !p.slow {
		return &pb.ChatCompletion{Id: "c", Object: "chat.completion", Model: "m", Choices: []*pb.Choice{{
			Message: &pb.ChatMessage{Role: "assistant", Content: structpb.NewStringValue("ok")}, FinishReason: proto.String("stop")}}}, nil
	}
	n := p.calls.Add(1)
	ref := bufpool.From(ctx)
	<-ctx.Done()
	if n == 1 {
		return nil, ctx.Err()
	}
	p.seen <- struct{}{}
	<-p.check // the client has its answer: the handler has returned
	held := ref != (bufpool.Ref{}) && ref.Hold()
	if held {
		ref.Release()
	}
	// An attempt still running would read req.Body.MessagesJson here (the
	// Anthropic translation, the simulator): only safe while held.
	p.result <- held
	return nil, ctx.Err()
}

// panicOnCapped is a metrics observer with a bug: it panics on a capped hedge,
// in the handler's goroutine, while the primary attempt still runs.
type panicOnCapped struct{}

func (panicOnCapped) Failover(string, string, string) {}
func (panicOnCapped) Empty(string, string)            {}
func (panicOnCapped) Hidden(string, int)              {}
func (panicOnCapped) Hedge(_, outcome string) {
	if outcome == router.HedgeCapped {
		panic("observer bug")
	}
}

// A request whose handler panics (here a metrics observer's bug, on a capped
// hedge, while the primary attempt still runs) is answered 500 / Internal by
// the chain that recovers it, and its lent buffer stays lent: the attempt
// still running may read it (an Anthropic translation, the simulator) and
// takes no hold of its own before it sends. REST and gRPC alike.
func TestALentBufferOutlivesARecoveredPanic(t *testing.T) {
	a := &probeProvider{name: "a", slow: true, seen: make(chan struct{}, 4), check: make(chan struct{}), result: make(chan bool, 4)}
	b := &probeProvider{name: "b"}
	r := serve(t, func(c *Config) {
		rt := router.New(slog.New(slog.DiscardHandler), []router.Target{{Provider: a, Configured: []string{"m"}}, {Provider: b, Configured: []string{"m"}}},
			router.WithObserver(panicOnCapped{}))
		require.NoError(t, rt.SetVirtualModels([]router.VirtualModel{{Source: "vm", Strategy: router.StrategyFailover,
			Targets: []router.VirtualTarget{{Model: "a/m"}, {Model: "b/m"}}, HedgeAfter: 20 * time.Millisecond}}))
		c.Router = rt
	})
	long := strings.Repeat("a long prompt ", 8000) // ~110 KB
	rest := func() int {
		body := `{"model":"vm","messages":[{"role":"user","content":"` + long + `"}]}`
		req, _ := http.NewRequest(http.MethodPost, "http://"+r.http+"/v1/chat/completions", bytes.NewReader([]byte(body)))
		req.Header.Set("Authorization", "Bearer sk-master")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusOK, rest(), "the hedge (backup wins) spends the chain's credit")

	// REST: the next hedge is capped; the observer panics; the chain recovers.
	done := make(chan int, 1)
	go func() { done <- rest() }()
	<-a.seen
	code := <-done
	a.check <- struct{}{}
	restHeld := <-a.result
	require.Equal(t, http.StatusInternalServerError, code)

	// gRPC: the same.
	conn := r.dialGRPC(t)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer sk-master")
	gerr := make(chan error, 1)
	go func() {
		_, err := pb.NewChatServiceClient(conn).CreateChatCompletion(ctx, &pb.ChatCompletionRequest{Model: "vm",
			Messages: []*pb.ChatMessage{{Role: "user", Content: structpb.NewStringValue(long)}}})
		gerr <- err
	}()
	<-a.seen
	err := <-gerr
	a.check <- struct{}{}
	grpcHeld := <-a.result
	require.Equal(t, codes.Internal, status.Code(err))
	require.True(t, restHeld, "REST gave the buffer back after a recovered panic while an attempt still ran")
	require.True(t, grpcHeld, "gRPC gave the buffer back after a recovered panic while an attempt still ran")
}
