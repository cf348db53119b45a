package server

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/bufpool"
	"github.com/switchyard/switchyard/internal/codec"
)

// recordingCodec is the server's codec, noting each Ref a Capture ends up with.
type recordingCodec struct {
	codec.Codec
	mu   *sync.Mutex
	refs *[]bufpool.Ref
}

func (rc recordingCodec) Unmarshal(data mem.BufferSlice, v any) error {
	err := rc.Codec.Unmarshal(data, v)
	if c, ok := v.(*codec.Capture); ok {
		rc.mu.Lock()
		*rc.refs = append(*rc.refs, c.Ref)
		rc.mu.Unlock()
	}
	return err
}

type stubChat struct {
	pb.UnimplementedChatServiceServer
}

// grpc-go (serverStream.RecvMsg) decodes a second message of a unary call into
// the same Capture before it refuses the call (cardinality violation): both
// lendings go back, the first when the second message is decoded over it.
// grpc-go writes the refusal to the caller before the handler returns (the
// releases come after it), so the server is stopped, waiting for its
// handlers, before the lendings are looked at.
func TestAUnaryCallOfTwoMessagesGivesBothLendingsBack(t *testing.T) {
	var mu sync.Mutex
	var refs []bufpool.Ref
	gs := grpc.NewServer(grpc.ForceServerCodecV2(recordingCodec{mu: &mu, refs: &refs}), grpc.WaitForHandlers(true))
	gs.RegisterService(decodeErrorsAsInvalidArgument(&pb.ChatService_ServiceDesc, nil), &stubChat{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go gs.Serve(ln)
	defer gs.Stop()
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()

	long := &pb.ChatCompletionRequest{Model: "m", Messages: []*pb.ChatMessage{{Role: "user",
		Content: structpb.NewStringValue(strings.Repeat("a long prompt ", 8000))}}} // ~110 KB
	st, err := conn.NewStream(context.Background(), &grpc.StreamDesc{ClientStreams: true, ServerStreams: true},
		pb.ChatService_CreateChatCompletion_FullMethodName)
	require.NoError(t, err)
	require.NoError(t, st.SendMsg(long))
	require.NoError(t, st.SendMsg(long))
	require.NoError(t, st.CloseSend())
	err = st.RecvMsg(&pb.ChatCompletion{})
	require.ErrorContains(t, err, "cardinality violation")
	gs.Stop() // returns once the handler has

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, refs, 2)
	require.NotEqual(t, bufpool.Ref{}, refs[0])
	require.NotEqual(t, bufpool.Ref{}, refs[1])
	for i, ref := range refs {
		held := ref.Hold()
		if held {
			ref.Release()
		}
		require.False(t, held, "lending %d is still held after the call ended: nobody will give it back", i)
	}
}
