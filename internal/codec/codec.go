// Package codec is Switchyard's gRPC codec: protobuf on the wire, as always, but
// marshalled and unmarshalled by the code protoc-gen-go-vtproto generates for
// switchyard.v1 (no reflection, no per-map-entry allocations) instead of by
// protobuf-go's reflection-driven tables. Messages without generated methods
// (health, reflection, admin) go to grpc-go's own proto codec.
//
// Behaviour is protobuf-go's: what proto.Unmarshal rejects is rejected, with its
// error. The generated unmarshaller does not check that strings are UTF-8, recurses
// without limit, misreads a map entry whose key or value repeats or comes in another
// wire type, and drops unknown fields of map entries and of Struct, Value and
// ListValue; so a schema-guided walk over the bytes looks for all of these first,
// and anything unusual is left to proto.Unmarshal. A fuzz test holds the two to the
// same answers. One difference remains, on marshal: unknown fields inside a
// google.protobuf.Struct, Value or ListValue (types that never change, so only
// hand-made bytes carry them) are not written.
package codec

import (
	"unicode/utf8"

	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the fallback
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Name is the codec's name: it speaks the standard proto content-subtype.
const Name = "proto"

// maxDepth bounds the nesting the fast path accepts; deeper messages go to
// proto.Unmarshal and its own recursion limit.
const maxDepth = 100

// vtMessage is what protoc-gen-go-vtproto generates.
type vtMessage interface {
	proto.Message
	SizeVT() int
	MarshalToSizedBufferVT([]byte) (int, error)
	UnmarshalVT([]byte) error
}

// Codec implements encoding.CodecV2.
type Codec struct{}

// fallback is grpc-go's proto codec.
var fallback = encoding.GetCodecV2(Name)

// Name returns "proto".
func (Codec) Name() string { return Name }

// Marshal encodes v.
func (Codec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(vtMessage)
	if !ok {
		return fallback.Marshal(v)
	}
	size := m.SizeVT()
	if mem.IsBelowBufferPoolingThreshold(size) {
		buf := make([]byte, size)
		if _, err := m.MarshalToSizedBufferVT(buf); err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(buf)}, nil
	}
	pool := mem.DefaultBufferPool()
	buf := pool.Get(size)
	if _, err := m.MarshalToSizedBufferVT((*buf)[:size]); err != nil {
		pool.Put(buf)
		return nil, err
	}
	return mem.BufferSlice{mem.NewBuffer(buf, pool)}, nil
}

// Unmarshal decodes data into v.
func (Codec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(vtMessage)
	if !ok {
		return fallback.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	b := buf.ReadOnlyData()
	if wellFormed(b, m.ProtoReflect().Descriptor(), 0) && m.UnmarshalVT(b) == nil {
		return nil
	}
	proto.Reset(m)
	return proto.Unmarshal(b, m)
}

// wellFormed reports whether b parses as a message of type md with every known
// field in its schema's wire type, every known string field valid UTF-8 (what
// protobuf-go enforces for proto3) and nesting at most maxDepth. False means "let
// proto.Unmarshal decide", not "invalid".
func wellFormed(b []byte, md protoreflect.MessageDescriptor, depth int) bool {
	if depth > maxDepth {
		return false
	}
	fields := md.Fields()
	// The generated code drops unknown fields of map entries and of Struct, Value
	// and ListValue, and misreads a map entry's value sent twice or in another wire
	// type.
	entry := md.IsMapEntry()
	strict := entry || md.ParentFile().Package() == "google.protobuf"
	var seen uint8
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || !num.IsValid() {
			return false
		}
		b = b[n:]
		fd := fields.ByNumber(num)
		if fd == nil && strict || fd != nil && !wireTypeFits(fd, typ) {
			return false
		}
		if entry {
			if seen&(1<<num) != 0 {
				return false
			}
			seen |= 1 << num
		}
		if typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return false
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		if fd == nil {
			continue // unknown fields are kept as bytes, unchecked
		}
		switch fd.Kind() {
		case protoreflect.StringKind:
			if !utf8.Valid(v) {
				return false
			}
		case protoreflect.MessageKind:
			if !wellFormed(v, fd.Message(), depth+1) {
				return false
			}
		}
	}
	return true
}

// wireTypeFits reports whether a field of fd's kind may arrive as typ: its own wire
// type, or packed (bytes) for a repeated scalar.
func wireTypeFits(fd protoreflect.FieldDescriptor, typ protowire.Type) bool {
	var want protowire.Type
	switch fd.Kind() {
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind:
		return typ == protowire.BytesType
	case protoreflect.GroupKind:
		return false // none in Switchyard's schema; protobuf-go decides
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		want = protowire.Fixed32Type
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		want = protowire.Fixed64Type
	default:
		want = protowire.VarintType
	}
	return typ == want || fd.IsList() && typ == protowire.BytesType
}
