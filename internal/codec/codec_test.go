package codec

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/encoding"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/mem"
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
		require.NoError(t, Codec{}.Unmarshal(mem.BufferSlice{mem.SliceBuffer(std)}, got))
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
	_, plain = small[0].(mem.SliceBuffer)
	require.True(t, plain, "a small one is a plain slice")
	got := &pb.ChatCompletionRequest{}
	require.NoError(t, Codec{}.Unmarshal(data, got))
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
		want := proto.Unmarshal(data, &pb.ChatCompletionRequest{})
		require.Error(t, want, name)
		err := Codec{}.Unmarshal(mem.BufferSlice{mem.SliceBuffer(data)}, &pb.ChatCompletionRequest{})
		require.EqualError(t, err, want.Error(), name)
	}
	unknown := str(9999, bad)
	got := &pb.ChatCompletionRequest{}
	require.NoError(t, Codec{}.Unmarshal(mem.BufferSlice{mem.SliceBuffer(unknown)}, got))
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

// Nesting past the fast path's limit goes to protobuf-go, which decodes it (or,
// past its own limit, rejects it) instead of recursing without bound.
func TestDeepNestingIsLeftToProtobufGo(t *testing.T) {
	for _, depth := range []int{maxDepth + 5, 20000} {
		v := structpb.NewNullValue()
		for range depth {
			v = structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{v}})
		}
		inner, err := proto.MarshalOptions{}.Marshal(&structpb.Struct{Fields: map[string]*structpb.Value{"deep": v}})
		if err != nil { // protobuf-go refuses to marshal past its limit: build it by hand
			inner = deepBytes(depth)
		}
		data := field(extraField(t), inner)
		want := &pb.ChatCompletionRequest{}
		wantErr := proto.Unmarshal(data, want)
		got := &pb.ChatCompletionRequest{}
		err = Codec{}.Unmarshal(mem.BufferSlice{mem.SliceBuffer(data)}, got)
		if wantErr != nil {
			require.EqualError(t, err, wantErr.Error(), "depth %d", depth)
			continue
		}
		require.NoError(t, err, "depth %d", depth)
		require.True(t, proto.Equal(want, got), "depth %d", depth)
	}
}

// deepBytes is a Struct {"deep": [[[...null...]]]} nested depth lists deep.
func deepBytes(depth int) []byte {
	v := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 0) // Value.null_value
	for range depth {
		list := field(1, v) // ListValue.values
		v = field(6, list)  // Value.list_value
	}
	entry := append(str(1, "deep"), field(2, v)...)
	return field(1, entry)
}

// A field sent with another wire type than the schema's (an older or newer
// client) is an unknown field to protobuf-go; the codec agrees.
func TestWrongWireTypeIsAnUnknownField(t *testing.T) {
	data := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 7) // model as a varint
	data = append(data, str(1, "up/gpt-4o")...)
	want, got := &pb.ChatCompletionRequest{}, &pb.ChatCompletionRequest{}
	require.NoError(t, proto.Unmarshal(data, want))
	require.NoError(t, Codec{}.Unmarshal(mem.BufferSlice{mem.SliceBuffer(data)}, got))
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
	require.NoError(t, Codec{}.Unmarshal(a, got))
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
	f.Fuzz(func(t *testing.T, data []byte) {
		// The request (what the server decodes) and the response and chunk (what the
		// Go client decodes).
		for _, m := range []proto.Message{&pb.ChatCompletionRequest{}, &pb.ChatCompletion{}, &pb.ChatCompletionChunk{}} {
			want := m.ProtoReflect().New().Interface()
			wantErr := proto.Unmarshal(data, want)
			got := m.ProtoReflect().New().Interface()
			err := Codec{}.Unmarshal(mem.BufferSlice{mem.SliceBuffer(data)}, got)
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
// fails CI without timing anything): the output buffer and its two wrappers.
func TestMarshalAllocations(t *testing.T) {
	for _, m := range samples(t)[:5] {
		allocs := testing.AllocsPerRun(200, func() {
			data, err := Codec{}.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			data.Free()
		})
		require.LessOrEqual(t, allocs, 3.0, "%T", m)
	}
}
