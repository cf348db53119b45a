package codec

import (
	"bytes"

	"google.golang.org/protobuf/encoding/protowire"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
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
// its number a caller sent are dropped (dropMarks), so that it cannot be forged.
var transcodedMark = protowire.AppendVarint(protowire.AppendTag(nil, markField, protowire.VarintType), 1)

const markField = protowire.MaxValidNumber

// Transcoded reports whether req's messages_json was written by this codec from
// the messages a gRPC caller sent (JSON Switchyard made, which may go upstream as
// it is, as the REST surface's checked bytes do), and takes the mark off.
func Transcoded(req *pb.ChatCompletionRequest) bool {
	u := req.ProtoReflect().GetUnknown()
	if !bytes.HasSuffix(u, transcodedMark) {
		return false
	}
	req.ProtoReflect().SetUnknown(u[:len(u)-len(transcodedMark)])
	return true
}

// dropMarks removes from m's unknown fields any of transcodedMark's number.
func dropMarks(req *pb.ChatCompletionRequest) {
	u := req.ProtoReflect().GetUnknown()
	if !bytes.Contains(u, transcodedMark[:len(transcodedMark)-1]) { // its tag: almost never there
		return
	}
	var kept []byte
	for p := u; len(p) > 0; {
		num, _, n := protowire.ConsumeField(p)
		if n < 0 {
			return // not ours to judge: unknown bytes as protobuf-go kept them
		}
		if num != markField {
			kept = append(kept, p[:n]...)
		}
		p = p[n:]
	}
	req.ProtoReflect().SetUnknown(kept)
}

// transcodeChat decodes a chat request whose messages have the common shape
// without building them: they are written as the upstream JSON straight from
// their encoding (openaijson.TranscodeMessages), into messages_json; the other
// fields are decoded as usual. False when it cannot (req is then to be reset
// and decoded in full): messages of another shape, a messages_json the caller
// set, or bytes the fast path would not take.
func transcodeChat(b []byte, req *pb.ChatCompletionRequest) bool {
	if !worthTranscoding(b) {
		return false
	}
	var msgs [][]byte
	rest := make([]byte, 0, 512)
	for p := b; len(p) > 0; {
		num, typ, n := protowire.ConsumeTag(p)
		if n < 0 {
			return false
		}
		m := protowire.ConsumeFieldValue(num, typ, p[n:])
		if m < 0 {
			return false
		}
		switch {
		case num == fieldMessagesJSON:
			return false // the caller's own bytes: decoded, as always
		case num == fieldMessages && typ == protowire.BytesType:
			v, _ := protowire.ConsumeBytes(p[n:])
			msgs = append(msgs, v)
		default:
			rest = append(rest, p[:n+m]...)
		}
		p = p[n+m:]
	}
	if len(msgs) == 0 {
		return false
	}
	js, ok := openaijson.TranscodeMessages(make([]byte, 0, len(b)+len(b)/8+16), msgs)
	if !ok {
		return false
	}
	if fast, err := check(rest, req.ProtoReflect().Descriptor(), 0, 1); err != nil || !fast || req.UnmarshalVT(rest) != nil {
		return false
	}
	dropMarks(req)
	req.MessagesJson = js
	req.ProtoReflect().SetUnknown(append(req.ProtoReflect().GetUnknown(), transcodedMark...))
	return true
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
