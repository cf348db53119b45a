package codec

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/openaijson"
)

type chatServer struct {
	pb.UnimplementedChatServiceServer
	calls int
}

func (s *chatServer) CreateChatCompletion(context.Context, *pb.ChatCompletionRequest) (*pb.ChatCompletion, error) {
	s.calls++
	return &pb.ChatCompletion{Id: "x"}, nil
}

// serveChat serves chat with this codec (and opts) over an in-memory
// connection until t ends, and gives a client of it that sends with the codec.
func serveChat(t *testing.T, chat pb.ChatServiceServer, opts ...grpc.ServerOption) pb.ChatServiceClient {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer(append([]grpc.ServerOption{grpc.ForceServerCodecV2(Codec{})}, opts...)...)
	pb.RegisterChatServiceServer(srv, chat)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(Codec{}), grpc.MaxCallSendMsgSize(8<<20)))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return pb.NewChatServiceClient(conn)
}

// Over gRPC, a request nested past the limit never reaches the handler, and the
// caller is told why. (grpc-go reports every codec error as codes.Internal, with
// the codec's text.)
func TestDeepRequestOverGRPCNeverReachesTheHandler(t *testing.T) {
	chat := &chatServer{}
	client := serveChat(t, chat)

	deep := func(n int) *pb.ChatCompletionRequest { // n JSON levels
		v := structpb.NewListValue(&structpb.ListValue{})
		for range n - 2 {
			v = structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{v}})
		}
		return &pb.ChatCompletionRequest{Model: "m", Extra: &structpb.Struct{Fields: map[string]*structpb.Value{"x": v}}}
	}
	_, err := client.CreateChatCompletion(context.Background(), deep(openaijson.MaxDepth))
	require.NoError(t, err)
	require.Equal(t, 1, chat.calls)
	_, err = client.CreateChatCompletion(context.Background(), deep(openaijson.MaxDepth+1))
	require.Error(t, err)
	require.Contains(t, status.Convert(err).Message(), "nested deeper than 128 levels")
	t.Logf("the caller sees %v", err)
	require.Equal(t, 1, chat.calls, "the handler never saw it")
}

type recordingServer struct {
	pb.UnimplementedChatServiceServer
	got [][]byte
}

func (s *recordingServer) CreateChatCompletion(_ context.Context, req *pb.ChatCompletionRequest) (*pb.ChatCompletion, error) {
	s.got = append(s.got, append([]byte(nil), req.GetMessagesJson()...))
	return &pb.ChatCompletion{Id: "x"}, nil
}

// The server reads messages into buffers that are not cleared (Buffers): each
// message, longer and shorter than the one before it, arrives as sent, with
// nothing of an earlier one in it.
func TestMessagesReadIntoReusedBuffersArriveWhole(t *testing.T) {
	rec := &recordingServer{}
	client := serveChat(t, rec, experimental.BufferPool(Buffers))
	var want [][]byte
	for i, n := range []int{600_000, 300_000, 150_000, 70_000, 20_000, 5_000, 600_000, 1_000} {
		text := strings.Repeat(string(rune('a'+i)), n)
		req := &pb.ChatCompletionRequest{Model: "m", Messages: []*pb.ChatMessage{{Role: "user", Content: structpb.NewStringValue(text)}}}
		data, err := proto.Marshal(req)
		require.NoError(t, err)
		var alone pb.ChatCompletionRequest // the same bytes decoded from one fresh buffer
		require.NoError(t, Codec{}.Unmarshal(mem.BufferSlice{mem.SliceBuffer(data)}, &alone))
		require.Greater(t, len(alone.GetMessagesJson()), n, "transcoded: the conversation is in messages_json")
		want = append(want, alone.GetMessagesJson())
		_, err = client.CreateChatCompletion(context.Background(), req)
		require.NoError(t, err)
	}
	require.Len(t, rec.got, len(want))
	for i := range want {
		require.True(t, bytes.Equal(want[i], rec.got[i]), "message %d (%d bytes) arrived changed", i, len(want[i]))
	}
}
