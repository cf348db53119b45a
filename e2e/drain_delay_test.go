package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/testutil"
)

// newCallsDuringTheDelay makes one REST and one gRPC chat call, each on a new
// connection, and yields the REST status and the gRPC error.
func newCallsDuringTheDelay(t *testing.T, g *gateway) (int, error) {
	t.Helper()
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := fresh.Post(g.base+"/chat/completions", "application/json",
		strings.NewReader(`{"model":"up/gpt-4o","messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	resp.Body.Close()
	conn, err := grpc.NewClient(g.app.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	_, err = pb.NewChatServiceClient(conn).CreateChatCompletion(context.Background(), grpcReq())
	return resp.StatusCode, err
}

// TestDrainDelayServesWhileNotReady: with server.drain_delay, SIGTERM's Shutdown
// turns /health/ready to 503 and gRPC health to NOT_SERVING at once, while both
// ports go on accepting and serving new calls; a second signal (EndDrainDelay)
// ends the delay, and both ports close.
func TestDrainDelayServesWhileNotReady(t *testing.T) {
	t.Parallel()
	g := start(t, "  drain_delay: 1h\n")
	root := "http://" + g.app.HTTPAddr()
	code, _ := get(t, root+"/health/ready")
	require.Equal(t, http.StatusOK, code)

	shutdown := make(chan error, 1)
	go func() { shutdown <- g.app.Shutdown(context.Background()) }()
	require.Eventually(t, func() bool { c, _ := get(t, root+"/health/ready"); return c == http.StatusServiceUnavailable },
		5*time.Second, 10*time.Millisecond, "readiness is off at once")
	h, err := healthpb.NewHealthClient(g.conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	require.Equal(t, healthpb.HealthCheckResponse_NOT_SERVING, h.GetStatus())

	status, grpcErr := newCallsDuringTheDelay(t, g)
	require.Equal(t, http.StatusOK, status, "a new REST connection is served during the delay")
	require.NoError(t, grpcErr, "a new gRPC connection is served during the delay")
	require.Empty(t, shutdown, "the delay is still running")

	g.app.EndDrainDelay()
	select {
	case err := <-shutdown:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not end after EndDrainDelay")
	}
	require.True(t, testutil.Refused(g.app.HTTPAddr()), "REST port closed")
	require.True(t, testutil.Refused(g.app.GRPCAddr()), "gRPC port closed")
}

// TestDrainDelayRunsOut: without a second signal, Shutdown closes the ports once
// server.drain_delay has passed, not before.
func TestDrainDelayRunsOut(t *testing.T) {
	t.Parallel()
	const delay = 300 * time.Millisecond
	g := start(t, "  drain_delay: "+delay.String()+"\n")
	began := time.Now()
	require.NoError(t, g.app.Shutdown(context.Background()))
	require.GreaterOrEqual(t, time.Since(began), delay)
	require.True(t, testutil.Refused(g.app.HTTPAddr()), "REST port closed")
	require.True(t, testutil.Refused(g.app.GRPCAddr()), "gRPC port closed")
}
