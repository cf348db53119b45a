package codec

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/openaijson"
)

// A Capture receives what Unmarshal would: the message, or the decode error kept
// instead of returned.
func TestCaptureKeepsTheDecodeError(t *testing.T) {
	good, err := proto.Marshal(&pb.ChatCompletionRequest{Model: "m"})
	require.NoError(t, err)
	cases := []struct {
		name    string
		data    []byte
		wantErr error
	}{
		{"valid message", good, nil},
		{"too deep", field(extraField(t), deepBytes(openaijson.MaxDepth+10)), ErrTooDeep},
		{"not protobuf", []byte{0xff, 0xff, 0xff}, errAny},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := &pb.ChatCompletionRequest{}
			c := &Capture{Msg: req}
			require.NoError(t, Codec{}.Unmarshal(mem.BufferSlice{mem.SliceBuffer(tc.data)}, c), "the receive itself never fails")
			direct := Codec{}.Unmarshal(mem.BufferSlice{mem.SliceBuffer(tc.data)}, &pb.ChatCompletionRequest{})
			switch {
			case tc.wantErr == nil:
				require.NoError(t, c.Err)
				require.Equal(t, "m", req.GetModel())
			case tc.wantErr == errAny:
				require.Error(t, c.Err)
			default:
				require.ErrorIs(t, c.Err, tc.wantErr)
			}
			require.Equal(t, direct == nil, c.Err == nil, "the same verdict as Unmarshal")
		})
	}
}

var errAny = errors.New("any error")
