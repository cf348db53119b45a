package codec

import (
	"runtime"
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
		{"long code, escapes adding a fifth", chat(strings.Repeat("\tfmt.Println(\"a\", b)\n", 4000), nil), true, true, true},
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

// A long conversation received into a lending Capture allocates no buffer of
// its size: its upstream JSON goes into the lent one (here given back after
// each call, as a finished request does). Without lending, each call allocates
// more than the conversation. The bound is an eighth of the conversation
// (under -race, whose instrumentation allocates more, half).
func TestALentTranscodeAllocatesNoBodySizedBuffer(t *testing.T) {
	text := strings.Repeat("a \"long\" prompt\twith é\n", 8000) // ~200 KB
	data, err := proto.Marshal(&pb.ChatCompletionRequest{Model: "m",
		Messages: []*pb.ChatMessage{{Role: "user", Content: structpb.NewStringValue(text)}}})
	require.NoError(t, err)
	perCall := func(lend bool) uint64 {
		run := func() {
			c := &Capture{Msg: &pb.ChatCompletionRequest{}, Lend: lend}
			require.NoError(t, Codec{}.Unmarshal(mem.BufferSlice{mem.SliceBuffer(data)}, c))
			require.True(t, Transcoded(c.Msg.(*pb.ChatCompletionRequest)))
			require.Equal(t, lend, c.Ref != (bufpool.Ref{}), "lent")
			c.Ref.Release()
		}
		run() // the pool's first buffer
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		const runs = 100
		for range runs {
			run()
		}
		runtime.ReadMemStats(&after)
		return (after.TotalAlloc - before.TotalAlloc) / runs
	}
	require.Greater(t, perCall(false), uint64(len(text)), "without lending, the JSON is allocated")
	bound := uint64(len(text) / 8)
	if raceEnabled {
		bound = uint64(len(text) / 2)
	}
	require.Less(t, perCall(true), bound, "with lending, no buffer of the conversation's size is")
}
