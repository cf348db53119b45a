package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/fakeupstream"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestDiscoveryOutageAndRecovery(t *testing.T) {
	t.Parallel()
	up := fakeupstream.New()
	t.Cleanup(up.Close)
	up.FailModels(503)
	g := startWith(t, up, "  recheck_interval: 20ms\n")
	root := "http://" + g.app.HTTPAddr()

	code, body := get(t, root+"/health/ready")
	require.Equal(t, 503, code, "no model at all: not ready")
	require.Contains(t, body, "degraded")
	require.Contains(t, body, "up:", "the reason names the failing provider")
	code, _ = get(t, root+"/health")
	require.Equal(t, 200, code, "liveness stays a pure liveness check")
	grpcHealth := func() healthpb.HealthCheckResponse_ServingStatus {
		h, err := healthpb.NewHealthClient(g.conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
		require.NoError(t, err)
		return h.GetStatus()
	}
	require.Equal(t, healthpb.HealthCheckResponse_NOT_SERVING, grpcHealth(), "gRPC health says what /health/ready says")

	resp := post(t, g.base+"/chat/completions", strings.Replace(chatBody, "up/gpt-4o", "gpt-4o", 1)+`}`)
	require.Equal(t, 503, resp.StatusCode, "a bare name with no models known gets 503, not a misleading 404")
	resp = post(t, g.base+"/chat/completions", chatBody+`}`)
	require.Equal(t, 200, resp.StatusCode, "an explicit provider/model still reaches the provider")

	up.FailModels(0)
	require.Eventually(t, func() bool { c, _ := get(t, root+"/health/ready"); return c == 200 }, 5*time.Second, 20*time.Millisecond,
		"the recheck loop recovers the provider")
	require.Eventually(t, func() bool { return grpcHealth() == healthpb.HealthCheckResponse_SERVING }, 5*time.Second, 20*time.Millisecond,
		"gRPC health follows readiness back")
	resp = post(t, g.base+"/chat/completions", strings.Replace(chatBody, "up/gpt-4o", "gpt-4o", 1)+`}`)
	require.Equal(t, 200, resp.StatusCode)
}

func TestConfiguredModelsServeDuringDiscoveryOutage(t *testing.T) {
	t.Parallel()
	up := fakeupstream.New()
	t.Cleanup(up.Close)
	up.FailModels(500)
	g := startWith(t, up, "", withProviderYAML("    models: [gpt-4o]\n"))
	code, _ := get(t, "http://"+g.app.HTTPAddr()+"/health/ready")
	require.Equal(t, 200, code)
	resp := post(t, g.base+"/chat/completions", strings.Replace(chatBody, "up/gpt-4o", "gpt-4o", 1)+`}`)
	require.Equal(t, 200, resp.StatusCode)
}

func TestDrainEndsOpenStreamsWithTheInBandError(t *testing.T) {
	t.Parallel()
	g := start(t, "  drain_timeout: 300ms\n")
	g.up.Script(fakeupstream.Reply{Text: strings.Repeat("word ", 100), TokenDelay: 20 * time.Millisecond})
	resp := post(t, g.base+"/chat/completions", chatBody+`,"stream":true}`)
	require.Equal(t, 200, resp.StatusCode)

	g.up.Script(fakeupstream.Reply{Delay: 100 * time.Millisecond})
	unary := make(chan int, 1)
	go func() {
		r, err := http.Post(g.base+"/chat/completions", "application/json", strings.NewReader(chatBody+`}`))
		if err != nil {
			unary <- 0
			return
		}
		r.Body.Close()
		unary <- r.StatusCode
	}()
	time.Sleep(50 * time.Millisecond)
	shutdown := make(chan error, 1)
	go func() { shutdown <- g.app.Shutdown(context.Background()) }()

	events := sseEvents(t, resp)
	require.Greater(t, len(events), 2)
	require.NotEqual(t, "[DONE]", events[len(events)-1], "the stream was not complete")
	var last struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(events[len(events)-1]), &last))
	require.Equal(t, "stream_incomplete", last.Error.Code)
	require.Contains(t, last.Error.Message, "shutting down")
	require.Equal(t, 200, <-unary, "an in-flight unary call finishes within the drain deadline")
	require.NoError(t, <-shutdown)

	_, err := http.Get("http://" + g.app.HTTPAddr() + "/health")
	require.Error(t, err, "the listener stopped accepting")
}

// TestClientThatStopsReadingReleasesTheUpstream: a REST client that stops reading
// a stream is dropped after stream_idle_timeout of blocked writes, and the
// upstream request ends with it instead of staying pinned.
func TestClientThatStopsReadingReleasesTheUpstream(t *testing.T) {
	t.Parallel()
	g := start(t, "  stream_idle_timeout: 300ms\n")
	g.up.Script(fakeupstream.Reply{Text: strings.Repeat("word ", 80000)}) // ~25 MB of events
	conn, err := net.Dial("tcp", g.app.HTTPAddr())
	require.NoError(t, err)
	defer conn.Close()
	body := chatBody + `,"stream":true}`
	_, err = fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	require.NoError(t, err)
	// Never read: socket buffers fill, Switchyard's writes block, the deadline ends them.
	require.Eventually(t, func() bool { return g.up.Finished() == 1 }, 20*time.Second, 50*time.Millisecond,
		"the upstream request must end while the client is still connected")
	require.Eventually(t, func() bool {
		resp := post(t, g.base+"/chat/completions", chatBody+`}`)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 5*time.Second, 50*time.Millisecond, "the released upstream's slot is free again")
}

// TestStallEndsTheStreamOnBothSurfaces: a stall after the first byte ends the
// stream with the in-band error (REST) or an error status (gRPC) after the chunks
// received; a slow first byte is fine.
func TestStallEndsTheStreamOnBothSurfaces(t *testing.T) {
	t.Parallel()
	g := start(t, "  stream_idle_timeout: 200ms\n")
	stall := fakeupstream.Reply{Text: "one two three", StallAfter: 2, Stall: 5 * time.Second}

	g.up.Script(fakeupstream.Reply{Delay: 400 * time.Millisecond}, stall)
	events := sseEvents(t, post(t, g.base+"/chat/completions", chatBody+`,"stream":true}`))
	require.Equal(t, "[DONE]", events[len(events)-1], "waiting 400ms for the first byte is not a stall")
	events = sseEvents(t, post(t, g.base+"/chat/completions", chatBody+`,"stream":true}`))
	require.Len(t, events, 3, "two chunks, then the error")
	require.Contains(t, events[2], `"code":"stream_incomplete"`)
	require.Contains(t, events[2], "no data from the provider for 200ms")

	g.up.Script(stall)
	st, err := pb.NewChatServiceClient(g.conn).StreamChatCompletion(context.Background(), grpcReq())
	require.NoError(t, err)
	n := 0
	for {
		_, err = st.Recv()
		if err != nil {
			break
		}
		n++
	}
	require.Equal(t, 2, n)
	require.Equal(t, "stream_incomplete", reasonOf(err))
}

// TestGRPCClientThatStopsReadingReleasesTheUpstream: the same over gRPC, where
// flow control blocks Switchyard's sends; the provider's max_concurrency slot
// (and the breaker's permit) go back with the upstream, not when the stuck
// client finally leaves.
func TestGRPCClientThatStopsReadingReleasesTheUpstream(t *testing.T) {
	t.Parallel()
	g := start(t, "  stream_idle_timeout: 300ms\n", withProviderYAML("    limits: {max_concurrency: 1}\n"))
	g.up.Script(fakeupstream.Reply{Text: strings.Repeat("word ", 80000)})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := pb.NewChatServiceClient(g.conn).StreamChatCompletion(ctx, grpcReq())
	require.NoError(t, err)
	_, err = st.Recv() // the first chunk, then never read again
	require.NoError(t, err)
	require.Eventually(t, func() bool { return g.up.Finished() == 1 }, 20*time.Second, 50*time.Millisecond,
		"the upstream request must end while the client is still connected")
	require.Eventually(t, func() bool {
		resp := post(t, g.base+"/chat/completions", chatBody+`}`)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 5*time.Second, 50*time.Millisecond, "the released upstream's slot is free again")
}
