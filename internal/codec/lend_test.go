package codec

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/bufpool"
)

// A Capture that lends gets a long conversation transcoded into a lent buffer
// (its Ref; messages_json lies in it and is what it is without lending); a
// short one, one whose escapes outgrow the buffer (given back at once), one
// that is not transcoded, or a Capture that does not lend gets none.
func TestCaptureLendsLongConversations(t *testing.T) {
	long := strings.Repeat("a \"long\" prompt\twith é\n", 4000) // ~100 KB
	chat := func(text string, own []byte) []byte {
		b, err := proto.Marshal(&pb.ChatCompletionRequest{Model: "m", MessagesJson: own,
			Messages: []*pb.ChatMessage{{Role: "user", Content: structpb.NewStringValue(text)}}})
		require.NoError(t, err)
		return b
	}
	cases := []struct {
		name      string
		data      []byte
		lend      bool
		wantLent  bool
		wantTrans bool
	}{
		{"long, lending", chat(long, nil), true, true, true},
		{"long, not lending", chat(long, nil), false, false, true},
		{"short, lending", chat("hi", nil), true, false, true},
		{"long, outgrowing its buffer (escapes six bytes long)", chat(strings.Repeat("\x01", 100<<10), nil), true, false, true},
		{"long, with the caller's own messages_json", chat(long, []byte(`[]`)), true, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := &pb.ChatCompletionRequest{}
			c := &Capture{Msg: req, Lend: tc.lend}
			require.NoError(t, Codec{}.Unmarshal(mem.BufferSlice{mem.SliceBuffer(tc.data)}, c))
			require.NoError(t, c.Err)
			defer c.Ref.Release()
			require.Equal(t, tc.wantTrans, Transcoded(req))
			require.Equal(t, tc.wantLent, c.Ref != (bufpool.Ref{}))
			if tc.wantLent {
				require.Equal(t, unsafe.SliceData(c.Ref.Buf()), unsafe.SliceData(req.MessagesJson), "messages_json lies in the lent buffer")
			}
			plain := &pb.ChatCompletionRequest{} // received without a Capture: never lent
			require.NoError(t, Codec{}.Unmarshal(mem.BufferSlice{mem.SliceBuffer(tc.data)}, plain))
			require.Equal(t, string(plain.MessagesJson), string(req.MessagesJson))
		})
	}
}
