package e2e

import (
	"bufio"
	"context"
	"fmt"
	"github.com/switchyard/switchyard/internal/testutil"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
)

// heldUpstream is an OpenAI-compatible upstream (provider "held", model "m") whose
// chat answers wait until the test releases them, or the request ends.
type heldUpstream struct {
	*httptest.Server
	started chan struct{}
	release chan struct{}
	once    sync.Once
}

func newHeldUpstream(t *testing.T) *heldUpstream {
	h := &heldUpstream{started: make(chan struct{}, 16), release: make(chan struct{})}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/v1/models" {
			_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model","owned_by":"x"}]}`)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		h.started <- struct{}{}
		select {
		case <-h.release:
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,`+
			`"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}]}`)
	}))
	t.Cleanup(func() { h.letGo(); h.Close() })
	return h
}

func (h *heldUpstream) letGo() { h.once.Do(func() { close(h.release) }) }

// startHeld starts Switchyard (keys sk-master / sk-admin) with provider "held".
func startHeld(t *testing.T, serverYAML string) (*gateway, *heldUpstream) {
	held := newHeldUpstream(t)
	g := start(t, keysYAML+serverYAML, withYAML("  held:\n    type: openai\n    base_url: "+held.URL+"/v1\n"))
	return g, held
}

const heldBody = `{"model":"held/m","messages":[{"role":"user","content":"hi"}]}`

// heldREST posts a chat call in the background and yields its status (0: no
// answer) and body.
func heldREST(g *gateway) <-chan [2]string {
	out := make(chan [2]string, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, g.base+"/chat/completions", strings.NewReader(heldBody))
		req.Header.Set("Authorization", "Bearer sk-master")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- [2]string{"0", err.Error()}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		out <- [2]string{fmt.Sprint(resp.StatusCode), string(b)}
	}()
	return out
}

// heldGRPC makes a unary gRPC chat call in the background and yields its error.
func heldGRPC(g *gateway) <-chan error {
	out := make(chan error, 1)
	go func() {
		req := grpcReq()
		req.Model = "held/m"
		_, err := pb.NewChatServiceClient(g.conn).CreateChatCompletion(withKey("sk-master"), req)
		out <- err
	}()
	return out
}

// TestShutdownStopsBothPortsAtOnce: right after SIGTERM's Shutdown starts, with a
// REST and a gRPC call still in flight, both ports refuse new connections; the
// calls in flight then finish normally.
func TestShutdownStopsBothPortsAtOnce(t *testing.T) {
	t.Parallel()
	g, held := startHeld(t, "")
	rest := heldREST(g)
	<-held.started
	grpcCall := heldGRPC(g)
	<-held.started

	shutdown := make(chan error, 1)
	go func() { shutdown <- g.app.Shutdown(context.Background()) }()
	require.Eventually(t, func() bool { return testutil.Refused(g.app.HTTPAddr()) && testutil.Refused(g.app.GRPCAddr()) },
		5*time.Second, 10*time.Millisecond, "both ports refuse while calls are in flight")
	require.Empty(t, rest, "the REST call is still in flight")
	require.Empty(t, grpcCall, "the gRPC call is still in flight")

	held.letGo()
	require.Equal(t, "200", (<-rest)[0])
	require.NoError(t, <-grpcCall)
	require.NoError(t, <-shutdown)
}

// TestDrainDeadlineAnswersBothSurfaces: unary calls still running at the drain
// deadline get REST 503 with an OpenAI body, or gRPC Unavailable, both saying the
// gateway is shutting down, and are logged so (503), not as client cancels (499).
func TestDrainDeadlineAnswersBothSurfaces(t *testing.T) {
	t.Parallel()
	g, held := startHeld(t, "  drain_timeout: 200ms\n")
	rest := heldREST(g)
	<-held.started
	grpcCall := heldGRPC(g)
	<-held.started

	require.NoError(t, g.app.Shutdown(context.Background()))
	got := <-rest
	require.Equal(t, "503", got[0], got[1])
	require.Contains(t, got[1], `"code":"shutting_down"`)
	require.Contains(t, got[1], "shutting down")
	err := <-grpcCall
	require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	require.Contains(t, status.Convert(err).Message(), "shutting down")
	logs := g.logs.String()
	require.NotContains(t, logs, `"status":499`)
	require.Equal(t, 2, strings.Count(logs, `"status":503`), logs)
}

// TestReadTimeoutClosesAPartialBody: server.read_timeout bounds the request body;
// a client that announces 1000 bytes and sends one gets 408 and a closed connection.
func TestReadTimeoutClosesAPartialBody(t *testing.T) {
	t.Parallel()
	g := start(t, keysYAML+"  read_timeout: 300ms\n")
	conn, err := net.Dial("tcp", g.app.HTTPAddr())
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk-master\r\n"+
		"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
	require.NoError(t, err)
	start := time.Now()
	require.NoError(t, conn.SetReadDeadline(start.Add(5*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
	_, err = io.ReadAll(resp.Body)
	require.NoError(t, err)
	_, err = conn.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "the connection is closed")
	require.Less(t, time.Since(start), 3*time.Second)
}

// TestBearerSchemeAnyCase: "bearer" and "BEARER" are the Bearer scheme on both surfaces.
func TestBearerSchemeAnyCase(t *testing.T) {
	t.Parallel()
	g := start(t, keysYAML)
	for _, scheme := range []string{"bearer", "BEARER"} {
		resp := post(t, g.base+"/chat/completions", chatBody+`}`, "Authorization", scheme+" sk-master")
		require.Equal(t, http.StatusOK, resp.StatusCode, scheme)
		ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", scheme+" sk-master")
		_, err := pb.NewChatServiceClient(g.conn).CreateChatCompletion(ctx, grpcReq())
		require.NoError(t, err, scheme)
	}
}
