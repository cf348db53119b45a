package server

import (
	"bufio"
	"context"
	"encoding/json"
	"github.com/switchyard/switchyard/internal/testutil"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
)

func masterCtx() context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer sk-master")
}

func chatRequest() *pb.ChatCompletionRequest {
	req := &pb.ChatCompletionRequest{}
	if err := json.Unmarshal([]byte(`{"model":"up/m"}`), req); err != nil {
		panic(err)
	}
	req.Messages = []*pb.ChatMessage{{Role: "user"}}
	return req
}

// answer is a REST call's status and body (status 0: no answer, the body says why).
type answer struct {
	status int
	body   string
}

// restChat posts a chat call with the master key in the background and yields its answer.
func restChat(addr, body string) <-chan answer {
	out := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer sk-master")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- answer{0, err.Error()}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		out <- answer{resp.StatusCode, string(b)}
	}()
	return out
}

// grpcChat makes a unary gRPC chat call in the background and yields its error.
func grpcChat(chat pb.ChatServiceClient) <-chan error {
	out := make(chan error, 1)
	go func() {
		_, err := chat.CreateChatCompletion(masterCtx(), chatRequest())
		out <- err
	}()
	return out
}

// TestShutdownStopsBothListenersAtOnce: as soon as Shutdown starts, while a REST
// and a gRPC call are still in flight, both ports refuse new connections and a
// connected gRPC client can start no new call; the calls in flight then finish.
func TestShutdownStopsBothListenersAtOnce(t *testing.T) {
	t.Parallel()
	r := serve(t, nil) // drain deadline 10s: never reached here
	idle := pb.NewModelServiceClient(r.dialGRPC(t))
	_, err := idle.ListModels(masterCtx(), &pb.ListModelsRequest{})
	require.NoError(t, err, "a connected gRPC client")

	rest := restChat(r.http, chatJSON+`}`)
	require.Equal(t, "chat", <-r.p.started)
	grpcCall := grpcChat(pb.NewChatServiceClient(r.dialGRPC(t)))
	require.Equal(t, "chat", <-r.p.started)

	stopped := make(chan struct{})
	go func() { r.stop(); close(stopped) }()
	require.Eventually(t, func() bool { return testutil.Refused(r.http) && testutil.Refused(r.grpc) }, 5*time.Second, 10*time.Millisecond,
		"both listeners stop accepting while calls are in flight")
	require.Eventually(t, func() bool {
		_, err := idle.ListModels(masterCtx(), &pb.ListModelsRequest{})
		return status.Code(err) == codes.Unavailable
	}, 5*time.Second, 10*time.Millisecond, "a connected gRPC client can start no new call")
	select {
	case got := <-rest:
		t.Fatalf("the REST call ended before it was released: %v", got)
	case err := <-grpcCall:
		t.Fatalf("the gRPC call ended before it was released: %v", err)
	case <-stopped:
		t.Fatal("Shutdown returned with calls in flight")
	default:
	}

	r.p.letGo()
	require.Equal(t, http.StatusOK, (<-rest).status, "the REST call in flight finishes")
	require.NoError(t, <-grpcCall, "the gRPC call in flight finishes")
	<-stopped
}

// TestDrainDeadlineAnswersEveryCall: calls still running at the drain deadline get
// an explicit answer, not a cut: REST 503 with an OpenAI body, gRPC Unavailable,
// a started REST stream its in-band error, a gRPC stream that status; all logged
// as a shutdown (503), none as a client cancel (499).
func TestDrainDeadlineAnswersEveryCall(t *testing.T) {
	t.Parallel()
	r := serve(t, func(c *Config) { c.DrainTimeout = 100 * time.Millisecond })
	conn := r.dialGRPC(t)
	chat := pb.NewChatServiceClient(conn)

	restUnary := restChat(r.http, chatJSON+`}`)
	require.Equal(t, "chat", <-r.p.started)
	grpcUnary := grpcChat(chat)
	require.Equal(t, "chat", <-r.p.started)
	restStream := post(t, r.http, chatJSON+`,"stream":true}`)
	require.Equal(t, "stream", <-r.p.started)
	events := bufio.NewReader(restStream.Body)
	require.Contains(t, nextEvent(t, events), "word")
	grpcStream, err := chat.StreamChatCompletion(masterCtx(), chatRequest())
	require.NoError(t, err)
	_, err = grpcStream.Recv()
	require.NoError(t, err, "the gRPC stream's first chunk")
	require.Equal(t, "stream", <-r.p.started)

	r.stop() // returns after the deadline and the answers

	got := <-restUnary
	require.Equal(t, http.StatusServiceUnavailable, got.status, "REST unary: %s", got.body)
	var body struct {
		Error struct{ Message, Type, Code string }
	}
	require.NoError(t, json.Unmarshal([]byte(got.body), &body))
	require.Equal(t, "shutting_down", body.Error.Code)
	require.Equal(t, "server_error", body.Error.Type)
	require.Contains(t, body.Error.Message, "shutting down")

	err = <-grpcUnary
	require.Equal(t, codes.Unavailable, status.Code(err), "gRPC unary: %v", err)
	require.Contains(t, status.Convert(err).Message(), "shutting down")

	last := nextEvent(t, events)
	require.Contains(t, last, `"code":"stream_incomplete"`)
	require.Contains(t, last, "shutting down")

	_, err = grpcStream.Recv()
	require.Equal(t, codes.Unavailable, status.Code(err), "gRPC stream: %v", err)
	require.Contains(t, status.Convert(err).Message(), "shutting down")

	logs := r.logs.String()
	require.NotContains(t, logs, `"status":499`)
	require.Equal(t, 4, strings.Count(logs, `"status":503`), logs)
}
