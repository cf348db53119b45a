package codec

import (
	"bytes"
	"unsafe"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/bufpool"
	"github.com/switchyard/switchyard/openaijson"
)

// transcoding is off only in benchmarks that compare with decoding in full.
var transcoding = true

// ChatCompletionRequest's field numbers for its conversation.
const (
	fieldMessages     = 2
	fieldMessagesJSON = 24
)

// transcodedMark is the unknown field a request carries last when this codec
// wrote its messages_json itself, from its messages (see Transcoded). Fields of
// its number a caller sent are dropped (dropMarks), and only a whole last field
// counts, so that it cannot be forged.
var transcodedMark = protowire.AppendVarint(protowire.AppendTag(nil, markField, protowire.VarintType), 1)

const markField = protowire.MaxValidNumber

// Transcoded reports whether req's messages_json was written by this codec from
// the messages a gRPC caller sent (JSON Switchyard made, which may go upstream as
// it is, as the REST surface's checked bytes do), and takes the mark off. The
// mark counts only as the last whole field of the unknown fields: bytes that
// look like it inside another field's value are that field's.
func Transcoded(req *pb.ChatCompletionRequest) bool {
	u := req.ProtoReflect().GetUnknown()
	last, ok := lastField(u)
	if !ok || !bytes.Equal(u[last:], transcodedMark) {
		return false
	}
	req.ProtoReflect().SetUnknown(u[:last])
	return true
}

// lastField is where u's last whole field starts; false if u is empty or does
// not parse as fields.
func lastField(u []byte) (int, bool) {
	last := -1
	for off := 0; off < len(u); {
		_, _, n := protowire.ConsumeField(u[off:])
		if n < 0 {
			return 0, false
		}
		last, off = off, off+n
	}
	return last, last >= 0
}

// dropMarks removes from req's unknown fields every whole field of the mark's
// number (a caller's), so that the only one left can be the codec's own.
// Unknown bytes that do not parse as fields are dropped whole.
func dropMarks(req *pb.ChatCompletionRequest) {
	u := req.ProtoReflect().GetUnknown()
	if len(u) == 0 {
		return
	}
	var kept []byte
	for p := u; len(p) > 0; {
		num, _, n := protowire.ConsumeField(p)
		if n < 0 {
			req.ProtoReflect().SetUnknown(nil)
			return
		}
		if num != markField {
			kept = append(kept, p[:n]...)
		}
		p = p[n:]
	}
	if len(kept) != len(u) {
		req.ProtoReflect().SetUnknown(kept)
	}
}

// transcodeChat decodes a chat request whose messages have the common shape
// without building them: they are written as the upstream JSON straight from
// their encoding (openaijson.TranscodeMessage), into messages_json; the other
// fields are decoded as usual. The fields are read from the received buffers
// where they lie (fieldReader). False when it cannot (req is then to be reset
// and decoded in full): messages of another shape, a messages_json the caller
// set, or bytes the fast path would not take.
//
// With lend, a conversation long enough is written into a buffer bufpool lends
// (*lend), given back at once when the transcoding fails or outgrows it.
func transcodeChat(data mem.BufferSlice, req *pb.ChatCompletionRequest, lend *bufpool.Ref) bool {
	if len(data) == 1 && !worthTranscoding(data[0].ReadOnlyData()) {
		return false // a first look, copying nothing (several buffers: a long request, worth it)
	}
	var ref bufpool.Ref
	var buf []byte
	// The buffer is taken when the first message is read: a request without
	// messages, or with messages_json, gives up before it takes one.
	take := func() []byte {
		size := data.Len()
		if lend != nil {
			// A lent buffer has room for a quarter more (code, with its quotes,
			// tabs and newlines, escapes more than prose): outgrowing it costs the
			// allocation lending saves, and a copy. None for a short conversation.
			ref = bufpool.Get(size + size/4 + 16)
		}
		if buf = ref.Buf(); buf == nil {
			buf = make([]byte, 0, size+size/8+16) // room for the escapes of ordinary text
		}
		return buf
	}
	js, rest, ok := transcodeFields(take, make([]byte, 0, 512), newFieldReader(data))
	if ok && ref != (bufpool.Ref{}) && unsafe.SliceData(js) != unsafe.SliceData(buf) {
		ref.Release() // outgrown: js is a buffer of its own
		ref = bufpool.Ref{}
	}
	if ok {
		fast, nonFinite, err := check(rest, req.ProtoReflect().Descriptor(), 0, 1)
		ok = err == nil && fast && !nonFinite && req.UnmarshalVT(rest) == nil
	}
	if !ok {
		ref.Release()
		return false
	}
	if lend != nil {
		*lend = ref
	}
	dropMarks(req)
	req.MessagesJson = js
	req.ProtoReflect().SetUnknown(append(req.ProtoReflect().GetUnknown(), transcodedMark...))
	return true
}

// transcodeFields reads the request's top-level fields from r and writes its
// messages as a JSON array into the buffer take gives at the first of them,
// each as soon as it is read (its bytes were just read from memory: a 512 KB history read once for the fields and then
// again for the text paid a cache miss per message, ~5 % of the call); the
// other fields are appended to rest as they came. False for a messages_json the
// caller set, no messages, or fields or messages the fast path does not take.
func transcodeFields(take func() []byte, rest []byte, r *fieldReader) (js, _ []byte, ok bool) {
	var b []byte
	n := 0
	for {
		f, more, ok := r.next()
		if !ok {
			return nil, nil, false
		}
		if !more {
			break
		}
		num, typ, k := protowire.ConsumeTag(f)
		switch {
		case num == fieldMessagesJSON:
			return nil, nil, false // the caller's own bytes: decoded, as always
		case num == fieldMessages && typ == protowire.BytesType:
			v, _ := protowire.ConsumeBytes(f[k:])
			if n == 0 {
				b = append(take(), '[')
			} else {
				b = append(b, ',')
			}
			n++
			if b, ok = openaijson.TranscodeMessage(b, v); !ok {
				return nil, nil, false
			}
		default:
			rest = append(rest, f...)
		}
	}
	if n == 0 {
		return nil, nil, false
	}
	return append(b, ']'), rest, true
}

// worthTranscoding is a first look at b's top-level fields, copying nothing:
// it has messages and no messages_json.
func worthTranscoding(b []byte) bool {
	has := false
	for p := b; len(p) > 0; {
		num, typ, n := protowire.ConsumeField(p)
		if n < 0 || num == fieldMessagesJSON {
			return false
		}
		has = has || (num == fieldMessages && typ == protowire.BytesType)
		p = p[n:]
	}
	return has
}
