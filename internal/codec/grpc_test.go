package codec

import (
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
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

// Over gRPC, a request nested past the limit never reaches the handler, and the
// caller is told why. (grpc-go reports every codec error as codes.Internal, with
// the codec's text.)
func TestDeepRequestOverGRPCNeverReachesTheHandler(t *testing.T) {
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer(grpc.ForceServerCodecV2(Codec{}))
	chat := &chatServer{}
	pb.RegisterChatServiceServer(srv, chat)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	conn, err := grpc.NewClient("passthrough:///bufnet", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(Codec{})))
	require.NoError(t, err)
	defer conn.Close()
	client := pb.NewChatServiceClient(conn)

	deep := func(n int) *pb.ChatCompletionRequest { // n JSON levels
		v := structpb.NewListValue(&structpb.ListValue{})
		for range n - 2 {
			v = structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{v}})
		}
		return &pb.ChatCompletionRequest{Model: "m", Extra: &structpb.Struct{Fields: map[string]*structpb.Value{"x": v}}}
	}
	_, err = client.CreateChatCompletion(context.Background(), deep(openaijson.MaxDepth))
	require.NoError(t, err)
	require.Equal(t, 1, chat.calls)
	_, err = client.CreateChatCompletion(context.Background(), deep(openaijson.MaxDepth+1))
	require.Error(t, err)
	require.Contains(t, status.Convert(err).Message(), "nested deeper than 128 levels")
	t.Logf("the caller sees %v", err)
	require.Equal(t, 1, chat.calls, "the handler never saw it")
}
