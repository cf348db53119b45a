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
// same answers.
//
// A chat request's conversation, when its messages have the common shape (role,
// content as a string or null, name, tool_call_id, refusal), is not decoded at
// all: it is written straight from its encoding as the upstream JSON, into
// messages_json, and marked as the codec's own (Transcoded), so that it goes
// upstream as the REST surface's checked bytes do — a long gRPC history then
// costs one pass over its bytes, not a proto tree and its re-encoding
// (BenchmarkLongHistoryToUpstreamJSON). Its meaning is protobuf-go's, which
// FuzzUnmarshal holds it to, and its bytes the encoder's (FuzzTranscode).
//
// Three differences remain. On unmarshal, a message nested deeper than its JSON
// form may be on the REST surface (openaijson.MaxDepth levels) is refused with
// ErrTooDeep, however it would be decoded: protobuf-go would take 10000 levels,
// which the gateway would then have to re-encode and send upstream. A double or
// float that is NaN or ±Infinity is refused (an *openaijson.Error naming the
// member): JSON has no such number, and the upstream would get null. On marshal,
// unknown fields inside a google.protobuf.Struct, Value or ListValue (types that
// never change, so only hand-made bytes carry them) are not written.
package codec

import (
	"fmt"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the fallback
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/bufpool"
	"github.com/switchyard/switchyard/openaijson"
)

// Name is the codec's name: it speaks the standard proto content-subtype.
const Name = "proto"

// maxDepth bounds the message nesting the fast path accepts; deeper messages go to
// proto.Unmarshal. (Nesting past openaijson.MaxDepth JSON levels is refused first.)
const maxDepth = 100

// ErrTooDeep is Unmarshal's error for a message that, written as JSON, would nest
// deeper than openaijson.MaxDepth (the REST surface's limit): a Value inside a
// ListValue inside a Value... errors.Is(err, openaijson.ErrTooDeep) holds too. Its
// GRPCStatus is InvalidArgument, but note that grpc-go turns any codec error on
// the receiving side into codes.Internal ("grpc: failed to unmarshal the received
// message: ...", keeping this text).
var ErrTooDeep error = depthError{}

type depthError struct{}

func (depthError) Error() string {
	return fmt.Sprintf("message nested deeper than %d levels (counted as its JSON form nests)", openaijson.MaxDepth)
}

func (depthError) Unwrap() error { return openaijson.ErrTooDeep }

func (e depthError) GRPCStatus() *status.Status { return status.New(codes.InvalidArgument, e.Error()) }

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
	if size <= smallMax {
		data, buf := smallFor(size)
		if _, err := m.MarshalToSizedBufferVT(buf); err != nil {
			return nil, err
		}
		return data, nil
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
	if c, ok := v.(*Capture); ok {
		var lend *bufpool.Ref
		if c.Lend {
			// grpc-go decodes a second message of a unary call into the same
			// Capture (then refuses the call): its first lending goes back.
			c.Ref.Release()
			c.Ref, lend = bufpool.Ref{}, &c.Ref
		}
		c.Err = unmarshal(data, c.Msg, lend)
		return nil
	}
	return unmarshal(data, v, nil)
}

// unmarshal is Unmarshal; a chat request's conversation may be transcoded into
// a lent buffer when lend is not nil (*lend is then its lending).
func unmarshal(data mem.BufferSlice, v any, lend *bufpool.Ref) error {
	m, ok := v.(vtMessage)
	if !ok {
		return fallback.Unmarshal(data, v)
	}
	req, chat := m.(*pb.ChatCompletionRequest)
	if chat && transcoding && transcodeChat(data, req, lend) {
		return nil
	}
	buf := data.MaterializeToBuffer(gatherPool) // overwritten whole: no need to clear it first
	defer buf.Free()
	b := buf.ReadOnlyData()
	if chat {
		proto.Reset(req)
		defer dropMarks(req) // no caller-made transcodedMark
	}
	fast, nonFinite, err := check(b, m.ProtoReflect().Descriptor(), 0, 1)
	if err != nil {
		return err
	}
	if !fast || m.UnmarshalVT(b) != nil {
		proto.Reset(m)
		if err := proto.Unmarshal(b, m); err != nil {
			return err
		}
	}
	if nonFinite { // judged on what the message holds (a later value may replace one)
		return finite(m.ProtoReflect())
	}
	return nil
}

// check walks b as a message of type md (depth messages and jsonDepth JSON levels
// deep) and reports whether the fast path may decode it: every known field in its
// schema's wire type, every known string field valid UTF-8 (what protobuf-go
// enforces for proto3) and nesting at most maxDepth. False means "let
// proto.Unmarshal decide", not "invalid". The walk goes on past such a finding,
// into every submessage proto.Unmarshal would decode, so that err is ErrTooDeep
// for any message nested past openaijson.MaxDepth; it stops only at bytes that
// do not parse, where proto.Unmarshal stops too.
func check(b []byte, md protoreflect.MessageDescriptor, depth, jsonDepth int) (fast, nonFinite bool, err error) {
	if jsonDepth > openaijson.MaxDepth {
		return false, false, ErrTooDeep
	}
	fast = depth <= maxDepth
	fields := md.Fields()
	// The generated code drops unknown fields of map entries and of Struct, Value
	// and ListValue, and misreads a map entry's value sent twice or in another wire
	// type.
	entry := md.IsMapEntry()
	wkt := md.ParentFile().Package() == "google.protobuf"
	strict := entry || wkt
	var seen uint8
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || !num.IsValid() {
			return false, nonFinite, nil
		}
		b = b[n:]
		fd := fields.ByNumber(num)
		if fd == nil && strict {
			fast = false
		}
		if fd != nil && !wireTypeFits(fd, typ) {
			fast, fd = false, nil // an unknown field to protobuf-go
		}
		if entry {
			if seen&(1<<num) != 0 {
				fast = false
			}
			seen |= 1 << num
		}
		if typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return false, nonFinite, nil
			}
			nonFinite = nonFinite || fd != nil && notFinite(fd, typ, b[:n])
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return false, nonFinite, nil
		}
		b = b[n:]
		if fd == nil {
			continue // unknown fields are kept as bytes, unchecked
		}
		switch fd.Kind() {
		case protoreflect.StringKind:
			if !utf8.Valid(v) {
				fast = false
			}
		case protoreflect.MessageKind:
			ok, nf, err := check(v, fd.Message(), depth+1, jsonDepth+jsonLevels(fd, wkt))
			if err != nil {
				return false, false, err
			}
			fast, nonFinite = fast && ok, nonFinite || nf
		case protoreflect.DoubleKind, protoreflect.FloatKind: // packed
			nonFinite = nonFinite || notFinite(fd, typ, v)
			fast = fast && packedWhole(fd, v)
		default: // another packed scalar
			fast = fast && packedWhole(fd, v)
		}
	}
	return fast, nonFinite, nil
}

// packedWhole reports whether v, a packed run of fd's scalars, holds whole
// ones: fixed-size ones fill it, and its last varint ends within it. The
// generated decoder reads a varint cut short at the run's end on into the bytes
// after the run (TokenList's values took the next field's first byte, then read
// the rest of the message one byte off): such a run is left to proto.Unmarshal,
// which refuses it.
func packedWhole(fd protoreflect.FieldDescriptor, v []byte) bool {
	switch fd.Kind() {
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		return len(v)%4 == 0
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		return len(v)%8 == 0
	}
	for len(v) > 0 {
		_, n := protowire.ConsumeVarint(v)
		if n < 0 {
			return false
		}
		v = v[n:]
	}
	return true
}

// jsonLevels is how many levels of JSON nesting message field fd (of a
// google.protobuf message when wkt) adds, as openaijson writes it: an array for a
// repeated field and an object for a map (but ListValue's values and Struct's
// fields, which are the ListValue's array and the Struct's object), plus an object
// for a message or Struct and an array for a ListValue (a Value and a map entry
// are no level of their own); a message's extra Struct adds none, its members
// being written into the message's own object.
func jsonLevels(fd protoreflect.FieldDescriptor, wkt bool) int {
	n := 0
	if !wkt && (fd.IsList() || fd.IsMap()) {
		n++
	}
	sub := fd.Message()
	if sub.IsMapEntry() {
		return n
	}
	switch sub.FullName() {
	case "google.protobuf.Value":
		return n
	case "google.protobuf.Struct":
		if !wkt && fd.Name() == openaijson.ExtraField {
			return n
		}
	}
	return n + 1
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
