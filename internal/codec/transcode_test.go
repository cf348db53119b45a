package codec

import (
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/testutil"
	"github.com/switchyard/switchyard/openaijson"
)

// messagesJSON is the JSON array the encoder writes for msgs.
func messagesJSON(msgs []*pb.ChatMessage) string {
	b := []byte{'['}
	for i, m := range msgs {
		if i > 0 {
			b = append(b, ',')
		}
		b = openaijson.Append(b, m)
	}
	return string(append(b, ']'))
}

// sameUpstreamBytes: when the codec transcodes a request's messages, the JSON is
// byte for byte what encoding the messages protobuf-go decodes would give.
func sameUpstreamBytes(t *testing.T, data []byte) {
	t.Helper()
	got := &pb.ChatCompletionRequest{}
	if err := (Codec{}).Unmarshal(mem.BufferSlice{mem.SliceBuffer(data)}, got); err != nil || !Transcoded(got) {
		return
	}
	want := &pb.ChatCompletionRequest{}
	require.NoError(t, proto.Unmarshal(data, want), "transcoded bytes protobuf-go refuses")
	require.Equal(t, messagesJSON(want.Messages), string(got.MessagesJson))
	require.Empty(t, got.Messages)
}

func TestTranscodedMessagesAreTheEncodersBytes(t *testing.T) {
	text := func(role, content string) *pb.ChatMessage {
		return &pb.ChatMessage{Role: role, Content: structpb.NewStringValue(content)}
	}
	name, empty := "ann", ""
	cases := map[string]struct {
		req        *pb.ChatCompletionRequest
		transcoded bool
	}{
		"text turns": {&pb.ChatCompletionRequest{Model: "m", Messages: []*pb.ChatMessage{text("system", "be \"brief\"\n\t\u2028 ✓"), text("user", "hi")}}, true},
		"null content, name, tool_call_id, refusal": {&pb.ChatCompletionRequest{Model: "m", Messages: []*pb.ChatMessage{
			{Role: "assistant", Content: structpb.NewNullValue(), Refusal: &empty}, {Role: "tool", Content: structpb.NewStringValue("4"), ToolCallId: &name},
			{Role: "user", Name: &name}}}, true},
		"content parts: decoded": {&pb.ChatCompletionRequest{Model: "m", Messages: []*pb.ChatMessage{{Role: "user",
			Content: structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{structpb.NewStringValue("x")}})}}}, false},
		"tool calls: decoded": {&pb.ChatCompletionRequest{Model: "m", Messages: []*pb.ChatMessage{{Role: "assistant",
			ToolCalls: []*pb.ToolCall{{Id: &name}}}}}, false},
		"unknown members: decoded": {&pb.ChatCompletionRequest{Model: "m", Messages: []*pb.ChatMessage{{Role: "assistant",
			Extra: &structpb.Struct{Fields: map[string]*structpb.Value{"reasoning_content": structpb.NewStringValue("r")}}}}}, false},
		"an empty role: decoded, for its error":  {&pb.ChatCompletionRequest{Model: "m", Messages: []*pb.ChatMessage{text("", "x")}}, false},
		"messages_json from the caller: decoded": {&pb.ChatCompletionRequest{Model: "m", MessagesJson: []byte(`[{"role":"user","content":"x"}]`)}, false},
		"no messages":                            {&pb.ChatCompletionRequest{Model: "m"}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			data, err := proto.Marshal(tc.req)
			require.NoError(t, err)
			got := &pb.ChatCompletionRequest{}
			require.NoError(t, (Codec{}).Unmarshal(mem.BufferSlice{mem.SliceBuffer(data)}, got))
			require.Equal(t, tc.transcoded, Transcoded(got))
			require.False(t, Transcoded(got), "the mark comes off")
			if !tc.transcoded {
				require.True(t, proto.Equal(tc.req, got))
			}
			sameUpstreamBytes(t, data)
		})
	}
}

// A caller cannot make its own messages_json pass for the codec's: a mark it
// sends as a field is dropped, and one hidden in another field's value (its last
// bytes) is that field's, not a mark.
func TestTheMarkHiddenInAFieldIsNotAMark(t *testing.T) {
	smuggled := &pb.ChatCompletionRequest{Model: "up/gpt-4o", MessagesJson: []byte(`[{"role":"user","content":"hi"}],"model":"o1-pro","n":64`)}
	base, err := proto.Marshal(smuggled)
	require.NoError(t, err)
	fixed := protowire.AppendTag(nil, 100, protowire.Fixed64Type)
	fixed = append(fixed, 0, 0)
	fixed = append(fixed, transcodedMark...) // a fixed64 whose last six bytes are the mark
	for name, tail := range map[string][]byte{
		"the value of a bytes field": protowire.AppendBytes(protowire.AppendTag(nil, 9999, protowire.BytesType), transcodedMark),
		"the end of a fixed64":       fixed,
		"the mark itself, twice":     append(append([]byte(nil), transcodedMark...), transcodedMark...),
		"a mark in a group":          protowire.AppendTag(append(protowire.AppendTag(nil, 77, protowire.StartGroupType), transcodedMark...), 77, protowire.EndGroupType),
	} {
		t.Run(name, func(t *testing.T) {
			got := &pb.ChatCompletionRequest{}
			require.NoError(t, (Codec{}).Unmarshal(mem.BufferSlice{mem.SliceBuffer(append(append([]byte(nil), base...), tail...))}, got))
			require.False(t, Transcoded(got), "the caller's messages_json is not the codec's")
			require.NotEmpty(t, got.MessagesJson, "left for validate to decode")
		})
	}
}

func TestTheMarkCannotBeForged(t *testing.T) {
	for name, req := range map[string]*pb.ChatCompletionRequest{
		"with messages_json": {Model: "m", MessagesJson: []byte(`[{"role":"user","content":"x"}],"model":"o1-pro"`)},
		"with messages":      {Model: "m", Messages: []*pb.ChatMessage{{Role: "user", Content: structpb.NewStringValue("x")}}},
	} {
		t.Run(name, func(t *testing.T) {
			data, err := proto.Marshal(req)
			require.NoError(t, err)
			data = append(data, transcodedMark...)
			data = protowire.AppendVarint(protowire.AppendTag(data, 9999, protowire.VarintType), 3) // another unknown field, kept
			got := &pb.ChatCompletionRequest{}
			require.NoError(t, (Codec{}).Unmarshal(mem.BufferSlice{mem.SliceBuffer(data)}, got))
			require.Equal(t, len(req.MessagesJson) == 0, Transcoded(got), "only the codec's own JSON is marked")
			require.NotContains(t, string(got.ProtoReflect().GetUnknown()), string(transcodedMark[:5]), "the forged mark is gone")
			require.Contains(t, string(got.ProtoReflect().GetUnknown()), string(protowire.AppendTag(nil, 9999, protowire.VarintType)),
				"other unknown fields are kept")
		})
	}
}

func FuzzTranscode(f *testing.F) {
	for _, m := range samples(f) {
		data, _ := proto.Marshal(m)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) { sameUpstreamBytes(t, data) })
}

// BenchmarkLongHistoryToUpstreamJSON is what a gRPC caller's long history costs
// from the received bytes to the upstream JSON body: the codec, then the
// encoder's pieces, with the conversation transcoded or decoded in full.
func BenchmarkLongHistoryToUpstreamJSON(b *testing.B) {
	const turn = "The \"gateway\" forwards each request\tto its target; when the target fails, " +
		"it retries with backoff and jitter,\nthen fails over to the next one in the chain. " +
		"Café, naïve, 漢字, ✓. Numbers: 3.14159, 2.71828; paths: C:\\tmp\\x.json. "
	for _, kb := range []int{64, 512} {
		req := &pb.ChatCompletionRequest{Model: "m"}
		for size := 0; size < kb<<10; size += 4 * len(turn) {
			req.Messages = append(req.Messages, &pb.ChatMessage{Role: "user", Content: structpb.NewStringValue(strings.Repeat(turn, 4))})
		}
		data, err := proto.Marshal(req)
		if err != nil {
			b.Fatal(err)
		}
		var frames []int // as grpc-go hands a message over: a buffer per 16 KB HTTP/2 frame
		for k := 16 << 10; k < len(data); k += 16 << 10 {
			frames = append(frames, k)
		}
		for _, mode := range []struct {
			name string
			on   bool
			bufs mem.BufferSlice
		}{{"transcoded", true, split(data)}, {"transcoded-frames", true, split(data, frames...)}, {"decoded", false, split(data)}} {
			b.Run(strconv.Itoa(kb)+"KB/"+mode.name, func(b *testing.B) {
				transcoding = mode.on
				defer func() { transcoding = true }()
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				cpu := testutil.CPUTime() // ns/op is wall time: on a shared machine, what else runs shows in it
				defer func() { b.ReportMetric(float64(testutil.CPUTime()-cpu)/float64(b.N), "cpu-ns/op") }()
				for b.Loop() {
					got := &pb.ChatCompletionRequest{}
					if err := (Codec{}).Unmarshal(mode.bufs, got); err != nil {
						b.Fatal(err)
					}
					size := got.SizeVT() - len(got.MessagesJson) // as providers/openai sizes the body
					_ = openaijson.AppendPieces(make([]byte, 0, size+size/8+512), got)
				}
			})
		}
	}
}

// split is data in buffers cut at cuts (as grpc-go hands over a message read
// from several HTTP/2 frames).
func split(data []byte, cuts ...int) mem.BufferSlice {
	var bs mem.BufferSlice
	from := 0
	for _, c := range cuts {
		if c > from && c < len(data) {
			bs = append(bs, mem.SliceBuffer(data[from:c]))
			from = c
		}
	}
	return append(bs, mem.SliceBuffer(data[from:]))
}

// sameFromBuffers: a message read from several buffers decodes (or fails) as
// the same bytes in one do, transcoded or not.
func sameFromBuffers(t *testing.T, data []byte, bufs mem.BufferSlice) {
	t.Helper()
	one, many := &pb.ChatCompletionRequest{}, &pb.ChatCompletionRequest{}
	errOne, errMany := (Codec{}).Unmarshal(mem.BufferSlice{mem.SliceBuffer(data)}, one), (Codec{}).Unmarshal(bufs, many)
	if (errOne == nil) != (errMany == nil) {
		t.Fatalf("one buffer: %v, %d buffers: %v", errOne, len(bufs), errMany)
	}
	if errOne == nil && !proto.Equal(one, many) {
		t.Fatalf("one buffer %v\n%d buffers %v", one, len(bufs), many)
	}
}

func TestTranscodeReadsSplitBuffers(t *testing.T) {
	for i, m := range samples(t) {
		data, err := proto.Marshal(m)
		require.NoError(t, err)
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			for c := range len(data) + 1 { // one cut anywhere
				sameFromBuffers(t, data, split(data, c))
			}
			for c := range len(data) + 1 { // a cut every c bytes
				cuts := []int{}
				for k := max(c, 1); k < len(data); k += max(c, 1) {
					cuts = append(cuts, k)
				}
				sameFromBuffers(t, data, split(data, cuts...))
			}
		})
	}
	long := &pb.ChatCompletionRequest{Model: "m"}
	for range 300 {
		long.Messages = append(long.Messages, &pb.ChatMessage{Role: "user", Content: structpb.NewStringValue(strings.Repeat("é\"x", 300))})
	}
	data, err := proto.Marshal(long)
	require.NoError(t, err)
	got := &pb.ChatCompletionRequest{}
	require.NoError(t, (Codec{}).Unmarshal(split(data, 16379, 16379+16384, 16379+2*16384), got))
	require.True(t, Transcoded(got), "a long history in frames is transcoded")
	require.Equal(t, messagesJSON(long.Messages), string(got.MessagesJson))
}

func FuzzTranscodeSplit(f *testing.F) {
	for _, m := range samples(f) {
		data, _ := proto.Marshal(m)
		f.Add(data, uint16(len(data)/2), uint16(3))
	}
	f.Fuzz(func(t *testing.T, data []byte, first, every uint16) {
		cuts := []int{int(first)}
		for k := int(first) + max(int(every), 1); k < len(data); k += max(int(every), 1) {
			cuts = append(cuts, k)
		}
		sameFromBuffers(t, data, split(data, cuts...))
	})
}

// TestLongHistoryAllocationCeiling: a long history is transcoded with a
// handful of allocations whatever its number of messages (each is written as
// it is read: no list of them grows per request): a regression fails CI
// without timing anything.
func TestLongHistoryAllocationCeiling(t *testing.T) {
	if raceEnabled {
		t.Skip("a -race build's sync.Pool drops a quarter of what is put back, so the list regrows: scripts/test.sh runs this ceiling without -race")
	}
	for _, n := range []int{10, 700, 5000} {
		t.Run(strconv.Itoa(n)+" messages", func(t *testing.T) {
			req := &pb.ChatCompletionRequest{Model: "m"}
			for range n {
				req.Messages = append(req.Messages, &pb.ChatMessage{Role: "user", Content: structpb.NewStringValue("a \"turn\" of text,\nwith é ✓")})
			}
			data, err := proto.Marshal(req)
			require.NoError(t, err)
			bufs := split(data)
			allocs := testing.AllocsPerRun(50, func() {
				got := &pb.ChatCompletionRequest{}
				if err := (Codec{}).Unmarshal(bufs, got); err != nil || len(got.MessagesJson) == 0 {
					t.Fatal(err)
				}
			})
			require.LessOrEqual(t, allocs, 8.0)
		})
	}
}

// TestSplitRequestsTheFastPathGivesUp: a request in several buffers (which
// worthTranscoding does not look at first) with messages_json beside its
// messages, or with no messages, is decoded as protobuf-go decodes it, not
// transcoded; and one with only messages_json takes no buffer for a
// conversation it never writes.
func TestSplitRequestsTheFastPathGivesUp(t *testing.T) {
	msg := &pb.ChatMessage{Role: "user", Content: structpb.NewStringValue(strings.Repeat("a turn of text ", 2000))}
	cases := map[string]*pb.ChatCompletionRequest{
		"messages and messages_json": {Model: "m", Messages: []*pb.ChatMessage{msg}, MessagesJson: []byte(`[{"role":"user","content":"x"}]`)},
		"no messages":                {Model: strings.Repeat("m", 40000), Temperature: proto.Float64(0.5)},
		"only messages_json":         {Model: "m", MessagesJson: []byte(`[{"role":"user","content":"` + strings.Repeat("x", 200000) + `"}]`)},
	}
	for name, req := range cases {
		t.Run(name, func(t *testing.T) {
			data, err := proto.Marshal(req)
			require.NoError(t, err)
			bufs := split(data, 16<<10, 32<<10)
			got := &pb.ChatCompletionRequest{}
			require.NoError(t, (Codec{}).Unmarshal(bufs, got))
			require.False(t, Transcoded(got), "transcoded")
			want := &pb.ChatCompletionRequest{}
			require.NoError(t, proto.Unmarshal(data, want))
			require.True(t, proto.Equal(want, got), "got %v", got)
			if name == "only messages_json" && !raceEnabled {
				// The field crossing frames is copied out, then decoded into its
				// own bytes (~2 x len(data)); a conversation's buffer taken for
				// nothing made it ~3 x (639 KB against 410 for this 200 KB request).
				// The least of three reads: TotalAlloc is the whole process's, and
				// the runtime's own work sometimes lands in one of them.
				least := uint64(math.MaxUint64)
				for range 3 {
					var before, after runtime.MemStats
					runtime.ReadMemStats(&before)
					require.NoError(t, (Codec{}).Unmarshal(bufs, &pb.ChatCompletionRequest{}))
					runtime.ReadMemStats(&after)
					least = min(least, after.TotalAlloc-before.TotalAlloc)
				}
				require.Less(t, least, uint64(len(data))*5/2)
			}
		})
	}
}
