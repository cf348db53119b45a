package e2e

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/fakeupstream"
)

func grpcReq() *pb.ChatCompletionRequest {
	return &pb.ChatCompletionRequest{Model: "up/gpt-4o",
		Messages: []*pb.ChatMessage{{Role: "user", Content: structpb.NewStringValue("hi")}}}
}

func withKey(key string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+key)
}

func TestGRPCUnaryAndTargetHeader(t *testing.T) {
	t.Parallel()
	g := start(t, "")
	var hdr metadata.MD
	resp, err := pb.NewChatServiceClient(g.conn).CreateChatCompletion(context.Background(), grpcReq(), grpc.Header(&hdr))
	require.NoError(t, err)
	require.Equal(t, "Hello from the fake upstream!", resp.GetChoices()[0].GetMessage().GetContent().GetStringValue())
	require.Equal(t, []string{"up/gpt-4o"}, hdr.Get("x-switchyard-target"))
	require.NotEmpty(t, hdr.Get("x-request-id"))
	require.Equal(t, int32(21), resp.GetUsage().GetTotalTokens())
}

func TestGRPCStream(t *testing.T) {
	t.Parallel()
	g := start(t, "")
	req := grpcReq()
	yes := true
	req.StreamOptions = &pb.StreamOptions{IncludeUsage: &yes}
	st, err := pb.NewChatServiceClient(g.conn).StreamChatCompletion(context.Background(), req)
	require.NoError(t, err)
	text, usage := readGRPCStream(t, st)
	require.Equal(t, "Hello from the fake upstream!", text)
	require.Equal(t, int32(21), usage.GetTotalTokens())
}

func TestGRPCStreamCutShortEndsWithError(t *testing.T) {
	t.Parallel()
	g := start(t, "")
	g.up.Script(fakeupstream.Reply{Text: "a b c d", CutAfter: 2})
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
	require.NotEqual(t, io.EOF, err, "an incomplete stream never ends cleanly")
	require.Equal(t, codes.Unavailable, status.Code(err))
	require.Equal(t, "stream_incomplete", reasonOf(err))
}

func reasonOf(err error) string {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetReason()
		}
	}
	return ""
}

func TestGRPCErrorsHaveProperCodes(t *testing.T) {
	t.Parallel()
	g := start(t, "")
	c := pb.NewChatServiceClient(g.conn)
	cases := []struct {
		name  string
		mut   func(*pb.ChatCompletionRequest)
		reply *fakeupstream.Reply
		code  codes.Code
	}{
		{"missing model", func(r *pb.ChatCompletionRequest) { r.Model = "" }, nil, codes.InvalidArgument},
		{"no messages", func(r *pb.ChatCompletionRequest) { r.Messages = nil }, nil, codes.InvalidArgument},
		{"unknown model", func(r *pb.ChatCompletionRequest) { r.Model = "nope" }, nil, codes.NotFound},
		{"upstream 401 (Switchyard's own key refused)", nil, &fakeupstream.Reply{Status: 401}, codes.Unavailable},
		{"upstream 400", nil, &fakeupstream.Reply{Status: 400}, codes.InvalidArgument},
		{"upstream 500", nil, &fakeupstream.Reply{Status: 500}, codes.Internal},
	}
	for _, tc := range cases { // one after another: they share the scripted upstream
		t.Run(tc.name, func(t *testing.T) {
			req := grpcReq()
			if tc.mut != nil {
				tc.mut(req)
			}
			if tc.reply != nil {
				g.up.Script(*tc.reply)
			}
			_, err := c.CreateChatCompletion(context.Background(), req)
			require.Equal(t, tc.code, status.Code(err))
		})
	}
}

func TestGRPCModelsHealthAndAuth(t *testing.T) {
	t.Parallel()
	g := start(t, "  master_key: sk-master\n")
	models := pb.NewModelServiceClient(g.conn)
	_, err := models.ListModels(context.Background(), &pb.ListModelsRequest{})
	require.Equal(t, codes.Unauthenticated, status.Code(err))
	list, err := models.ListModels(withKey("sk-master"), &pb.ListModelsRequest{})
	require.NoError(t, err)
	require.Len(t, list.GetData(), 2)

	h, err := healthpb.NewHealthClient(g.conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err, "health needs no key")
	require.Equal(t, healthpb.HealthCheckResponse_SERVING, h.GetStatus())
}

// grpcurl is installed by scripts/tools.sh; the test command puts it on PATH.
func grpcurl(t *testing.T, args ...string) string {
	t.Helper()
	bin := os.Getenv("GRPCURL")
	if bin == "" {
		bin = "grpcurl"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		home, _ := os.UserHomeDir()
		path, err = exec.LookPath(filepath.Join(home, ".cache", "switchyard", "bin", "grpcurl"))
	}
	require.NoError(t, err, "grpcurl not found: run the tests through `make test` (scripts/tools.sh installs it)")
	out, err := exec.Command(path, args...).CombinedOutput()
	require.NoError(t, err, string(out))
	return string(out)
}

func TestGrpcurlReflectionAndCalls(t *testing.T) {
	t.Parallel()
	g := start(t, "  master_key: sk-master\n")
	addr := g.app.GRPCAddr()
	out := grpcurl(t, "-plaintext", addr, "list")
	for _, svc := range []string{"switchyard.v1.ChatService", "switchyard.v1.ModelService",
		"switchyard.admin.v1.AdminService", "grpc.health.v1.Health"} {
		require.Contains(t, out, svc)
	}
	out = grpcurl(t, "-plaintext", addr, "grpc.health.v1.Health/Check")
	require.Contains(t, out, "SERVING")
	out = grpcurl(t, "-plaintext", "-H", "authorization: Bearer sk-master",
		"-d", `{"model":"up/gpt-4o","messages":[{"role":"user","content":"hi"}]}`,
		addr, "switchyard.v1.ChatService/CreateChatCompletion")
	require.Contains(t, out, "Hello from the fake upstream!")
}

// readGRPCStream reads a stream to its clean end: the text and the last usage.
func readGRPCStream(t *testing.T, st grpc.ServerStreamingClient[pb.ChatCompletionChunk]) (string, *pb.Usage) {
	t.Helper()
	var text strings.Builder
	var usage *pb.Usage
	for {
		c, err := st.Recv()
		if err == io.EOF {
			return text.String(), usage
		}
		require.NoError(t, err)
		for _, ch := range c.GetChoices() {
			text.WriteString(ch.GetDelta().GetContent())
		}
		if c.Usage != nil {
			usage = c.Usage
		}
	}
}
