package codec

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/openaijson"
)

const corpus = "../fakeupstream/testdata"

// samples are realistic messages of every chat type: the replay corpus (OpenAI,
// Groq, xAI; tool calls; vendor members kept in extra) decoded as the gateway does,
// and a request with every kind of content.
func samples(t testing.TB) []proto.Message {
	t.Helper()
	var out []proto.Message
	for _, name := range []string{"chat_completion.json", "chat_with_tools.json", "groq_chat_with_tools.json"} {
		data, err := os.ReadFile(filepath.Join(corpus, name))
		require.NoError(t, err)
		c := &pb.ChatCompletion{}
		require.NoError(t, openaijson.UnmarshalCompletion(data, c), name)
		out = append(out, c)
	}
	streams, err := filepath.Glob(filepath.Join(corpus, "*_stream.txt"))
	require.NoError(t, err)
	for _, name := range streams {
		f, err := os.Open(name)
		require.NoError(t, err)
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok || data == "[DONE]" {
				continue
			}
			c := &pb.ChatCompletionChunk{}
			require.NoError(t, openaijson.UnmarshalChunk([]byte(data), c), name)
			out = append(out, c)
		}
		f.Close()
	}
	req := &pb.ChatCompletionRequest{}
	require.NoError(t, openaijson.Unmarshal([]byte(`{"model":"up/gpt-4o","temperature":0.7,"max_tokens":1000,
		"messages":[{"role":"system","content":"Be brief. Ünïcödé ✓ 🚀"},
		  {"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"data:x"}}]}],
		"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"string"}}}}}],
		"stream_options":{"include_usage":true},"top_k":5,"vendor":{"nested":[1,"two",{"three":null}]}}`), req))
	out = append(out, req)
	// A history of the shape the codec transcodes to JSON without decoding it.
	history := &pb.ChatCompletionRequest{}
	require.NoError(t, openaijson.Unmarshal([]byte(`{"model":"up/gpt-4o","stream":true,"messages":[
		{"role":"system","content":"Be \"brief\".\n\tÜnïcödé ✓ 🚀 \u2028"},{"role":"user","content":"hi","name":"ann"},
		{"role":"assistant","content":null,"refusal":""},{"role":"tool","content":"42","tool_call_id":"c1"},
		{"role":"assistant","content":""}],"max_tokens":5}`), history))
	empty := proto.Clone(history).(*pb.ChatCompletionRequest)
	empty.Messages[1].Content = &structpb.Value{} // a Value with no kind: null as JSON
	out = append(out, history, empty)
	models, err := os.ReadFile(filepath.Join(corpus, "models.json"))
	require.NoError(t, err)
	list := &pb.ListModelsResponse{}
	require.NoError(t, openaijson.Unmarshal(models, list))
	return append(out, list)
}

func marshal(t testing.TB, m proto.Message) []byte {
	t.Helper()
	data, err := Codec{}.Marshal(m)
	require.NoError(t, err)
	return data.Materialize()
}

func TestMarshalDecodesAsProtobufGoDoes(t *testing.T) {
	for _, m := range samples(t) {
		got := m.ProtoReflect().New().Interface()
		require.NoError(t, proto.Unmarshal(marshal(t, m), got))
		require.True(t, proto.Equal(m, got), "%T: %v\nwant %v", m, got, m)
		std, err := proto.Marshal(m)
		require.NoError(t, err)
		require.Len(t, marshal(t, m), len(std), "%T", m)
	}
}

func TestUnmarshalGivesWhatProtobufGoGives(t *testing.T) {
	for _, m := range samples(t) {
		std, err := proto.Marshal(m)
		require.NoError(t, err)
		got := m.ProtoReflect().New().Interface()
		require.NoError(t, unmarshalAs(mem.BufferSlice{mem.SliceBuffer(std)}, got))
		require.True(t, proto.Equal(m, got), "%T", m)
	}
}

func TestLargeMessagesUsePooledBuffers(t *testing.T) {
	big := &pb.ChatCompletionRequest{Model: "m", Messages: []*pb.ChatMessage{{Role: "user", Content: structpb.NewStringValue(strings.Repeat("x", 64<<10))}}}
	data, err := Codec{}.Marshal(big)
	require.NoError(t, err)
	_, plain := data[0].(mem.SliceBuffer)
	require.False(t, plain, "a large message's buffer comes from the pool")
	small, err := Codec{}.Marshal(&pb.ChatCompletionRequest{Model: "m"})
	require.NoError(t, err)
	_, plain = small[0].(*mem.SliceBuffer)
	require.True(t, plain, "a small one is a plain slice")
	got := &pb.ChatCompletionRequest{}
	require.NoError(t, unmarshalAs(data, got))
	data.Free()
	require.True(t, proto.Equal(big, got))
}

// Strings must be UTF-8, as protobuf-go insists, wherever they sit: a message
// field, a nested Struct's key or value. Unknown fields are bytes, unchecked.
func TestInvalidUTF8IsRejectedLikeProtobufGo(t *testing.T) {
	bad := string([]byte{0xff, 'x'})
	cases := map[string][]byte{}
	cases["model"] = str(1, bad) // field 1 of ChatCompletionRequest is model
	badKey := append(str(1, bad), field(2, str(3, "v"))...)
	cases["nested struct key"] = field(extraField(t), field(1, badKey))
	vb := str(3, bad) // Value.string_value
	entry := append(str(1, "k"), field(2, vb)...)
	structBytes := field(1, entry) // Struct.fields
	cases["nested struct value"] = field(extraField(t), structBytes)
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			want := proto.Unmarshal(data, &pb.ChatCompletionRequest{})
			require.Error(t, want)
			err := unmarshalAs(mem.BufferSlice{mem.SliceBuffer(data)}, &pb.ChatCompletionRequest{})
			require.EqualError(t, err, want.Error())
		})
	}
	unknown := str(9999, bad)
	got := &pb.ChatCompletionRequest{}
	require.NoError(t, unmarshalAs(mem.BufferSlice{mem.SliceBuffer(unknown)}, got))
	require.Equal(t, unknown, []byte(got.ProtoReflect().GetUnknown()))
}

// extraField is the number of ChatCompletionRequest's extra Struct.
func extraField(t testing.TB) protowire.Number {
	fd := (&pb.ChatCompletionRequest{}).ProtoReflect().Descriptor().Fields().ByJSONName("extra")
	if fd == nil {
		fd = (&pb.ChatCompletionRequest{}).ProtoReflect().Descriptor().Fields().ByName("extra")
	}
	require.NotNil(t, fd)
	return fd.Number()
}

// Nesting past the fast path's limit goes to protobuf-go, which decodes it.
func TestDeepNestingIsLeftToProtobufGo(t *testing.T) {
	depth := maxDepth + 5 // messages: a Value and a ListValue per level, past the fast path's limit
	v := structpb.NewNullValue()
	for range depth {
		v = structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{v}})
	}
	data := field(extraField(t), deepBytes(depth))
	want := &pb.ChatCompletionRequest{}
	require.NoError(t, proto.Unmarshal(data, want))
	got := &pb.ChatCompletionRequest{}
	require.NoError(t, unmarshalAs(mem.BufferSlice{mem.SliceBuffer(data)}, got))
	require.True(t, proto.Equal(want, got))
	require.True(t, proto.Equal(v, got.GetExtra().GetFields()["deep"]))
}

// A message whose JSON form would nest past openaijson.MaxDepth is refused, as the
// REST surface refuses that JSON, wherever the nesting sits; one at the limit is
// decoded. The JSON depth is measured on openaijson's encoding of the message.
func TestNestingPastTheJSONLimitIsRefused(t *testing.T) {
	lists := func(n int) *structpb.Value { // n nested arrays
		v := structpb.NewListValue(&structpb.ListValue{})
		for range n - 1 {
			v = structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{v}})
		}
		return v
	}
	objects := func(n int) *structpb.Value { // n nested objects
		v := structpb.NewStructValue(&structpb.Struct{})
		for range n - 1 {
			v = structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"a": v}})
		}
		return v
	}
	shapes := map[string]func(n int) proto.Message{ // a message n JSON levels deep
		"unknown member": func(n int) proto.Message {
			return &pb.ChatCompletionRequest{Extra: &structpb.Struct{Fields: map[string]*structpb.Value{"x": lists(n - 1)}}}
		},
		"objects in an unknown member": func(n int) proto.Message {
			return &pb.ChatCompletionRequest{Extra: &structpb.Struct{Fields: map[string]*structpb.Value{"x": objects(n - 1)}}}
		},
		"message content": func(n int) proto.Message {
			return &pb.ChatCompletionRequest{Messages: []*pb.ChatMessage{{Content: lists(n - 3)}}}
		},
		"response_format": func(n int) proto.Message {
			return &pb.ChatCompletionRequest{ResponseFormat: objects(n - 1).GetStructValue()}
		},
		"chunk tool call": func(n int) proto.Message {
			return &pb.ChatCompletionChunk{Choices: []*pb.ChunkChoice{{Delta: &pb.ChatDelta{ToolCalls: []*pb.ToolCall{
				{Function: &pb.FunctionCall{Extra: &structpb.Struct{Fields: map[string]*structpb.Value{"x": lists(n - 7)}}}}}}}}}
		},
		"completion logprobs": func(n int) proto.Message {
			return &pb.ChatCompletion{Choices: []*pb.Choice{{Logprobs: objects(n - 3).GetStructValue()}}}
		},
	}
	for name, shape := range shapes {
		t.Run(name, func(t *testing.T) {
			for _, n := range []int{openaijson.MaxDepth, openaijson.MaxDepth + 1} {
				m := shape(n)
				require.Equal(t, n, jsonDepth(openaijson.Marshal(m)), "the shape is %d levels deep", n)
				data, err := proto.Marshal(m)
				require.NoError(t, err)
				got := m.ProtoReflect().New().Interface()
				err = unmarshalAs(mem.BufferSlice{mem.SliceBuffer(data)}, got)
				if n <= openaijson.MaxDepth {
					require.NoError(t, err)
					require.True(t, proto.Equal(m, got))
					continue
				}
				require.ErrorIs(t, err, ErrTooDeep)
				require.ErrorIs(t, err, openaijson.ErrTooDeep)
				require.Contains(t, err.Error(), "128 levels")
				require.Equal(t, codes.InvalidArgument, status.Code(err))
			}
		})
	}
}

// Refusing a very deep message (a million levels, 7 MB) costs little more than
// the copy of the bytes grpc-go hands over, and no recursion.
func TestVeryDeepMessageIsRefusedCheaply(t *testing.T) {
	for _, levels := range []int{20_000, 1_000_000} {
		data := field(extraField(t), deepBytes(levels))
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err := unmarshalAs(mem.BufferSlice{mem.SliceBuffer(data)}, &pb.ChatCompletionRequest{})
		runtime.ReadMemStats(&after)
		require.ErrorIs(t, err, ErrTooDeep, "%d levels", levels)
		allocated := after.TotalAlloc - before.TotalAlloc
		require.Less(t, allocated, uint64(64<<10), "%d levels (%d bytes): %d bytes allocated", levels, len(data), allocated)
	}
}

// jsonDepth is the nesting of the JSON data.
func jsonDepth(data []byte) int {
	dec := json.NewDecoder(bytes.NewReader(data))
	max, d := 0, 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return max
		}
		switch tok {
		case json.Delim('['), json.Delim('{'):
			d++
			max = maxInt(max, d)
		case json.Delim(']'), json.Delim('}'):
			d--
		}
	}
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// deepBytes is a Struct {"deep": [[[...null...]]]} nested depth lists deep, built
// from the inside out in one pass.
func deepBytes(depth int) []byte {
	null := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 0) // Value.null_value
	// sizes[i] is the size of the Value i lists deep.
	sizes := make([]int, depth+1)
	sizes[0] = len(null)
	for i := 1; i <= depth; i++ {
		list := 1 + protowire.SizeVarint(uint64(sizes[i-1])) + sizes[i-1] // ListValue.values
		sizes[i] = 1 + protowire.SizeVarint(uint64(list)) + list          // Value.list_value
	}
	v := make([]byte, 0, sizes[depth])
	for i := depth; i >= 1; i-- {
		list := 1 + protowire.SizeVarint(uint64(sizes[i-1])) + sizes[i-1]
		v = protowire.AppendVarint(protowire.AppendTag(v, 6, protowire.BytesType), uint64(list))
		v = protowire.AppendVarint(protowire.AppendTag(v, 1, protowire.BytesType), uint64(sizes[i-1]))
	}
	v = append(v, null...)
	entry := append(str(1, "deep"), field(2, v)...)
	return field(1, entry)
}

// A field sent with another wire type than the schema's (an older or newer
// client) is an unknown field to protobuf-go; the codec agrees.
// packedCutShort is an embeddings request whose tokens' packed run ends in a
// varint cut short (80), followed by an unknown field: protobuf refuses it; the
// generated decoder read the varint on into the next field (2304) and the rest
// one byte off, and the codec let it through to the upstream as other tokens.
var packedCutShort = []byte("\x0a\x11\x1a\x0f\x0a\x01\x80\x12\x0a\x09\x01\x02\x03\x04\x05\x06\x07\x08\x09" +
	"\x12\x11fake/text-embed-1")

func TestAPackedRunCutShortIsRefusedLikeProtobufGo(t *testing.T) {
	t.Parallel()
	require.Error(t, proto.Unmarshal(packedCutShort, &pb.CreateEmbeddingsRequest{}))
	require.Error(t, unmarshalAs(mem.BufferSlice{mem.SliceBuffer(packedCutShort)}, &pb.CreateEmbeddingsRequest{}))
	whole, err := proto.Marshal(&pb.CreateEmbeddingsRequest{Model: "m",
		Input: &pb.EmbeddingInput{Kind: &pb.EmbeddingInput_Tokens{Tokens: &pb.TokenList{Values: []int64{1, 300000, 7}}}}})
	require.NoError(t, err)
	got := &pb.CreateEmbeddingsRequest{}
	require.NoError(t, unmarshalAs(mem.BufferSlice{mem.SliceBuffer(whole)}, got))
	require.Equal(t, []int64{1, 300000, 7}, got.GetInput().GetTokens().GetValues())
}

func TestWrongWireTypeIsAnUnknownField(t *testing.T) {
	data := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 7) // model as a varint
	data = append(data, str(1, "up/gpt-4o")...)
	want, got := &pb.ChatCompletionRequest{}, &pb.ChatCompletionRequest{}
	require.NoError(t, proto.Unmarshal(data, want))
	require.NoError(t, unmarshalAs(mem.BufferSlice{mem.SliceBuffer(data)}, got))
	require.True(t, proto.Equal(want, got))
	require.Equal(t, "up/gpt-4o", got.GetModel())
}

func TestOtherMessagesUseTheStandardCodec(t *testing.T) {
	std := encoding.GetCodecV2("proto")
	m := &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}
	a, err := Codec{}.Marshal(m)
	require.NoError(t, err)
	b, err := std.Marshal(m)
	require.NoError(t, err)
	require.True(t, bytes.Equal(a.Materialize(), b.Materialize()))
	got := &healthpb.HealthCheckResponse{}
	require.NoError(t, unmarshalAs(a, got))
	require.Equal(t, healthpb.HealthCheckResponse_SERVING, got.Status)
	require.Equal(t, "proto", Codec{}.Name())
}

// FuzzUnmarshal: for any bytes, the codec accepts exactly what proto.Unmarshal
// accepts and decodes it to an equal message, for each chat message type; and what
// it marshals, protobuf-go decodes to that same message.
func FuzzUnmarshal(f *testing.F) {
	for _, m := range samples(f) {
		data, _ := proto.Marshal(m)
		f.Add(data)
	}
	f.Add(str(1, string([]byte{0xc3})))
	f.Add(deepBytes(3))
	f.Add(field(extraField(f), deepBytes(openaijson.MaxDepth-1)))
	f.Add(field(extraField(f), deepBytes(openaijson.MaxDepth)))
	f.Add(field(extraField(f), deepBytes(maxDepth+5)))
	nan, _ := proto.Marshal(&pb.ChatCompletionRequest{Model: "m", Temperature: proto.Float64(math.NaN())})
	f.Add(nan)
	f.Add(packedCutShort)
	f.Fuzz(func(t *testing.T, data []byte) {
		// The requests (what the server decodes) and the response and chunk (what the
		// Go client decodes).
		for _, m := range []proto.Message{&pb.ChatCompletionRequest{}, &pb.ChatCompletion{}, &pb.ChatCompletionChunk{}, &pb.CreateEmbeddingsRequest{}} {
			want := m.ProtoReflect().New().Interface()
			wantErr := proto.Unmarshal(data, want)
			got := m.ProtoReflect().New().Interface()
			err := unmarshalAs(mem.BufferSlice{mem.SliceBuffer(data)}, got)
			// The one difference: past openaijson.MaxDepth (as the JSON form nests;
			// openaijson writes a repeated scalar's or an empty list's array, which
			// the codec does not count, hence the one level of slack).
			if wantErr == nil && errors.Is(err, ErrTooDeep) {
				require.Greater(t, jsonDepth(openaijson.Marshal(want)), openaijson.MaxDepth, "%T", m)
				continue
			}
			// The other: a double that is NaN or ±Infinity, which JSON cannot carry.
			if oe := (*openaijson.Error)(nil); wantErr == nil && errors.As(err, &oe) && strings.Contains(oe.Msg, "JSON can carry") {
				require.True(t, hasNonFinite(want.ProtoReflect()), "%T: %v", m, err)
				continue
			}
			if wantErr == nil {
				require.LessOrEqual(t, jsonDepth(openaijson.Marshal(want)), openaijson.MaxDepth+1, "%T", m)
			}
			if wantErr != nil {
				require.Error(t, err, "%T", m)
				continue
			}
			require.NoError(t, err, "%T", m)
			canon(want.ProtoReflect())
			canon(got.ProtoReflect())
			require.True(t, proto.Equal(want, got), "%T\nwant %v\ngot  %v", m, want, got)
			again := m.ProtoReflect().New().Interface()
			require.NoError(t, proto.Unmarshal(marshal(t, got), again))
			canon(again.ProtoReflect())
			dropWellKnownUnknowns(got.ProtoReflect())
			require.True(t, proto.Equal(got, again), "%T\nwant %v\ngot  %v", m, got, again)
		}
	})
}

// dropWellKnownUnknowns clears the unknown fields of every Struct, Value and
// ListValue in m: the generated marshaller does not write them (see the package doc).
func dropWellKnownUnknowns(m protoreflect.Message) {
	walk(m, func(m protoreflect.Message) {
		if m.Descriptor().ParentFile().Package() == "google.protobuf" {
			m.SetUnknown(nil)
		}
	})
}

// walk calls f on m and every message in it.
func walk(m protoreflect.Message, f func(protoreflect.Message)) {
	if !m.IsValid() {
		return
	}
	f(m)
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsMap():
			if fd.MapValue().Kind() == protoreflect.MessageKind {
				v.Map().Range(func(_ protoreflect.MapKey, e protoreflect.Value) bool {
					walk(e.Message(), f)
					return true
				})
			}
		case fd.IsList():
			if fd.Kind() == protoreflect.MessageKind {
				for i := range v.List().Len() {
					walk(v.List().Get(i).Message(), f)
				}
			}
		case fd.Kind() == protoreflect.MessageKind:
			walk(v.Message(), f)
		}
		return true
	})
}

// canon rewrites the unknown fields of m and every message in it with minimal
// varints: protobuf-go re-encodes an unknown field's over-long tag, the generated
// code keeps it as sent; both mean the same field.
func canon(m protoreflect.Message) {
	walk(m, func(m protoreflect.Message) { m.SetUnknown(canonUnknown(m.GetUnknown())) })
}

func canonUnknown(u []byte) []byte {
	if len(u) == 0 {
		return nil
	}
	var out []byte
	for len(u) > 0 {
		num, typ, n := protowire.ConsumeTag(u)
		if n < 0 {
			return append(out, u...)
		}
		out = protowire.AppendTag(out, num, typ)
		u = u[n:]
		n = protowire.ConsumeFieldValue(num, typ, u)
		if n < 0 {
			return append(out, u...)
		}
		if typ == protowire.VarintType {
			v, _ := protowire.ConsumeVarint(u)
			out = protowire.AppendVarint(out, v)
		} else {
			out = append(out, u[:n]...)
		}
		u = u[n:]
	}
	return out
}

// str is a string field: tag and length-prefixed bytes.
func str(num protowire.Number, s string) []byte {
	return protowire.AppendString(protowire.AppendTag(nil, num, protowire.BytesType), s)
}

// field is a bytes (or embedded message) field.
func field(num protowire.Number, b []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), b)
}

// BenchmarkMarshal compares the codec with grpc-go's proto codec on a response and
// a stream chunk as the gateway sends them.
func BenchmarkMarshal(b *testing.B) {
	all := samples(b)
	for _, c := range []struct {
		name string
		m    proto.Message
	}{{"completion", all[1]}, {"chunk", all[4]}} {
		for _, codec := range []encoding.CodecV2{encoding.GetCodecV2("proto"), Codec{}} {
			b.Run(c.name+"/"+fmt.Sprintf("%T", codec), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					data, err := codec.Marshal(c.m)
					if err != nil {
						b.Fatal(err)
					}
					data.Free()
				}
			})
		}
	}
}

// BenchmarkUnmarshal compares the two on a request as a gRPC client sends it.
func BenchmarkUnmarshal(b *testing.B) {
	all := samples(b)
	req := all[len(all)-2]
	data, err := proto.Marshal(req)
	require.NoError(b, err)
	for _, codec := range []encoding.CodecV2{encoding.GetCodecV2("proto"), Codec{}} {
		b.Run(fmt.Sprintf("%T", codec), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(data)}, &pb.ChatCompletionRequest{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestMarshalAllocations holds the codec to its allocation ceiling (a regression
// fails CI without timing anything): a short message (a chunk, an answer) is
// its bytes and one for their two wrappers; a long one the pool's buffer and
// its two wrappers.
func TestMarshalAllocations(t *testing.T) {
	for _, m := range samples(t)[:5] {
		t.Run(fmt.Sprintf("%T", m), func(t *testing.T) {
			ceiling := 3.0
			if proto.Size(m) <= smallMax {
				ceiling = 2
			}
			allocs := testing.AllocsPerRun(200, func() {
				data, err := Codec{}.Marshal(m)
				if err != nil {
					t.Fatal(err)
				}
				data.Free()
			})
			require.LessOrEqual(t, allocs, ceiling, "%d bytes", proto.Size(m))
		})
	}
}

// TestSmallMessagesAtEverySize: each size up to smallMax is encoded whole, in
// a buffer of its own length.
func TestSmallMessagesAtEverySize(t *testing.T) {
	for size := 0; size <= smallMax; size++ {
		m := &pb.ChatCompletionChunk{Id: strings.Repeat("x", max(size-3, 0))}
		n := proto.Size(m)
		if n > smallMax {
			break
		}
		data, err := Codec{}.Marshal(m)
		require.NoError(t, err)
		require.Len(t, data, 1)
		require.Equal(t, n, data.Len())
		require.Len(t, data[0].ReadOnlyData(), n)
		got := &pb.ChatCompletionChunk{}
		require.NoError(t, proto.Unmarshal(data.Materialize(), got))
		require.True(t, proto.Equal(m, got), "%d bytes", n)
	}
}

// unmarshalAs is Codec.Unmarshal with a conversation the codec transcoded to
// JSON (Transcoded) decoded back into messages, for comparing with what
// protobuf-go decodes: the same request, whichever form it holds its messages in.
func unmarshalAs(data mem.BufferSlice, m any) error {
	if err := (Codec{}).Unmarshal(data, m); err != nil {
		return err
	}
	if req, ok := m.(*pb.ChatCompletionRequest); ok && Transcoded(req) {
		msgs, err := openaijson.Messages(req)
		if err != nil {
			return fmt.Errorf("transcoded messages do not decode: %w (%s)", err, req.MessagesJson)
		}
		req.Messages, req.MessagesJson = msgs, nil
	}
	return nil
}

// TestANumberJSONCannotCarryIsRefused: a double that is NaN or ±Infinity,
// wherever it is (a parameter, a message's content, a tool's schema, a stop
// list, an unknown member), has no JSON form: the request is refused naming
// the member, as openaijson names it, never sent upstream with null in its place.
func TestANumberJSONCannotCarryIsRefused(t *testing.T) {
	t.Parallel()
	nan, inf := math.NaN(), math.Inf(1)
	num := func(f float64) *structpb.Value { return structpb.NewNumberValue(f) }
	user := &pb.ChatMessage{Role: "user", Content: structpb.NewStringValue("hi")}
	cases := []struct {
		name  string
		req   *pb.ChatCompletionRequest
		param string
	}{
		{"temperature", &pb.ChatCompletionRequest{Model: "m", Temperature: proto.Float64(nan)}, "temperature"},
		{"top_p", &pb.ChatCompletionRequest{Model: "m", TopP: proto.Float64(inf)}, "top_p"},
		{"frequency_penalty", &pb.ChatCompletionRequest{Model: "m", FrequencyPenalty: proto.Float64(-inf)}, "frequency_penalty"},
		{"a message's content", &pb.ChatCompletionRequest{Model: "m", Messages: []*pb.ChatMessage{user, {Role: "user", Content: num(nan)}}},
			"messages[1].content"},
		{"a stop list", &pb.ChatCompletionRequest{Model: "m", Stop: structpb.NewListValue(&structpb.ListValue{
			Values: []*structpb.Value{structpb.NewStringValue("a"), num(inf)}})}, "stop[1]"},
		{"a tool's schema", &pb.ChatCompletionRequest{Model: "m", Tools: []*pb.Tool{{Type: "function", Function: &pb.FunctionDefinition{Name: "f",
			Parameters: &structpb.Struct{Fields: map[string]*structpb.Value{"x": num(nan)}}}}}}, "tools[0].function.parameters.x"},
		{"a member Switchyard does not model", &pb.ChatCompletionRequest{Model: "m",
			Extra: &structpb.Struct{Fields: map[string]*structpb.Value{"k": structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{num(1), num(nan)}})}}},
			"k[1]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := proto.Marshal(tc.req)
			require.NoError(t, err)
			err = Codec{}.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, &pb.ChatCompletionRequest{})
			var oe *openaijson.Error
			require.ErrorAs(t, err, &oe)
			require.Equal(t, tc.param, oe.Param)
			require.Contains(t, oe.Msg, "not a number JSON can carry")
		})
	}
	t.Run("a NaN a later value replaces passes", func(t *testing.T) {
		// Two encodings in a row are one message, merged: protobuf-go reads 0.5.
		first, err := proto.Marshal(&pb.ChatCompletionRequest{Model: "m", Temperature: proto.Float64(nan)})
		require.NoError(t, err)
		second, err := proto.Marshal(&pb.ChatCompletionRequest{Temperature: proto.Float64(0.5),
			Messages: []*pb.ChatMessage{{Role: "user", Content: num(nan)}, {Role: "user", Content: structpb.NewStringValue("x")}}})
		require.NoError(t, err)
		got := &pb.ChatCompletionRequest{}
		err = Codec{}.Unmarshal(mem.BufferSlice{mem.SliceBuffer(append(first, second...))}, got)
		var oe *openaijson.Error
		require.ErrorAs(t, err, &oe, "the message's own NaN is still refused")
		require.Equal(t, "messages[0].content", oe.Param)
		third, err := proto.Marshal(&pb.ChatCompletionRequest{Temperature: proto.Float64(0.5)})
		require.NoError(t, err)
		got = &pb.ChatCompletionRequest{}
		require.NoError(t, Codec{}.Unmarshal(mem.BufferSlice{mem.SliceBuffer(append(first, third...))}, got))
		require.Equal(t, 0.5, got.GetTemperature())
	})
	t.Run("finite numbers pass", func(t *testing.T) {
		req := &pb.ChatCompletionRequest{Model: "m", Temperature: proto.Float64(0.7), Messages: []*pb.ChatMessage{user},
			Extra: &structpb.Struct{Fields: map[string]*structpb.Value{"k": num(math.MaxFloat64)}}}
		b, err := proto.Marshal(req)
		require.NoError(t, err)
		got := &pb.ChatCompletionRequest{}
		require.NoError(t, Codec{}.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, got))
		require.Equal(t, 0.7, got.GetTemperature())
	})
}

// hasNonFinite reports whether m holds a double or float that is NaN or ±Inf.
func hasNonFinite(m protoreflect.Message) bool {
	found := false
	bad := func(v protoreflect.Value, fd protoreflect.FieldDescriptor) bool {
		switch fd.Kind() {
		case protoreflect.DoubleKind, protoreflect.FloatKind:
			return math.IsNaN(v.Float()) || math.IsInf(v.Float(), 0)
		case protoreflect.MessageKind:
			return hasNonFinite(v.Message())
		}
		return false
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList():
			for i := range v.List().Len() {
				found = found || bad(v.List().Get(i), fd)
			}
		case fd.IsMap():
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				found = found || bad(mv, fd.MapValue())
				return !found
			})
		default:
			found = bad(v, fd)
		}
		return !found
	})
	return found
}
