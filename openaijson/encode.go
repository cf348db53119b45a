package openaijson

import (
	"math"
	"math/bits"
	"slices"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/switchyard/switchyard/internal/bytemask"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
)

// alwaysLists are repeated fields written even when empty, because OpenAI does:
// a usage chunk has "choices": [], an empty model list has "data": [].
var alwaysLists = map[protoreflect.Name]bool{"choices": true, "data": true}

// Marshal encodes msg as OpenAI-shaped JSON.
func Marshal(msg proto.Message) []byte {
	return Append(make([]byte, 0, 512), msg)
}

// Append appends the JSON encoding of msg to b.
func Append(b []byte, msg proto.Message) []byte {
	return appendMessage(b, msg.ProtoReflect())
}

// AppendPieces is Append for a message with long raw JSON fields (a conversation
// kept as it arrived): it returns the JSON as pieces to write in order — the
// encoder's own bytes, appended to b, and between them each raw field's bytes as
// they are, not copied. Their concatenation is what Append writes.
func AppendPieces(b []byte, msg proto.Message) [][]byte {
	return appendPieces(b, msg, nil)
}

// AppendRequestPieces is AppendPieces for req as it goes upstream: its model,
// stream and stream_options are up's, its other members its own (req is not
// changed, nor copied).
func AppendRequestPieces(b []byte, req *pb.ChatCompletionRequest, up Upstream) [][]byte {
	return appendPieces(b, req, &up)
}

func appendPieces(b []byte, msg proto.Message, up *Upstream) [][]byte {
	type piece struct {
		from, to int
		raw      []byte
	}
	var ps []piece
	from := len(b)
	b = appendObject(b, msg.ProtoReflect(), func(b, raw []byte) []byte {
		ps = append(ps, piece{from: from, to: len(b)}, piece{raw: raw})
		from = len(b)
		return b
	}, up)
	ps = append(ps, piece{from: from, to: len(b)})
	out := make([][]byte, 0, len(ps))
	for _, p := range ps { // offsets: b's array may have moved as it grew
		if p.raw != nil {
			out = append(out, p.raw)
		} else if p.to > p.from {
			out = append(out, b[p.from:p.to])
		}
	}
	return out
}

func appendMessage(b []byte, m protoreflect.Message) []byte {
	switch v := m.Interface().(type) { // a nil one (an empty message) goes the generic way
	case *pb.ChatMessage:
		if v != nil && len(v.ToolCalls) == 0 {
			return appendChatMessage(b, v)
		}
	case *pb.ChatCompletion:
		if v != nil {
			return appendCompletion(b, v)
		}
	case *pb.Choice:
		if v != nil {
			return appendChoice(b, v)
		}
	case *pb.Usage:
		if v != nil {
			return appendUsage(b, v)
		}
	}
	return appendObject(b, m, nil, nil)
}

// The fields of the messages written without reflection, for their members in Extra.
var (
	completionFields = (&pb.ChatCompletion{}).ProtoReflect().Descriptor().Fields()
	choiceFields     = (&pb.Choice{}).ProtoReflect().Descriptor().Fields()
	usageFields      = (&pb.Usage{}).ProtoReflect().Descriptor().Fields()
)

// appendCompletion is appendObject for every non-stream answer a REST caller
// gets, without reflection (which was a twentieth of a small request's CPU):
// the same members in the same order, as appendChatMessage and the two below
// (TestAnswerFastPathIsTheGenericOne holds them to that).
func appendCompletion(b []byte, c *pb.ChatCompletion) []byte {
	b = appendString(append(b, `{"id":`...), c.Id)
	b = appendString(append(b, `,"object":`...), c.Object)
	b = strconv.AppendInt(append(b, `,"created":`...), c.Created, 10)
	b = appendString(append(b, `,"model":`...), c.Model)
	if c.SystemFingerprint != nil {
		b = appendString(append(b, `,"system_fingerprint":`...), *c.SystemFingerprint)
	}
	b = append(b, `,"choices":[`...)
	for i, ch := range c.Choices {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendMessage(b, ch.ProtoReflect())
	}
	b = append(b, ']')
	if c.Usage != nil {
		b = appendUsage(append(b, `,"usage":`...), c.Usage)
	}
	if c.ServiceTier != nil {
		b = appendString(append(b, `,"service_tier":`...), *c.ServiceTier)
	}
	if c.Extra != nil {
		b = appendMembers(b, c.Extra, completionFields, false)
	}
	return append(b, '}')
}

func appendChoice(b []byte, c *pb.Choice) []byte {
	b = strconv.AppendInt(append(b, `{"index":`...), int64(c.Index), 10)
	if c.Message != nil {
		b = appendMessage(append(b, `,"message":`...), c.Message.ProtoReflect())
	}
	if c.FinishReason != nil {
		b = appendString(append(b, `,"finish_reason":`...), *c.FinishReason)
	}
	if c.Logprobs != nil {
		b = appendStruct(append(b, `,"logprobs":`...), c.Logprobs, nil)
	}
	if c.Extra != nil {
		b = appendMembers(b, c.Extra, choiceFields, false)
	}
	return append(b, '}')
}

func appendUsage(b []byte, u *pb.Usage) []byte {
	b = strconv.AppendInt(append(b, `{"prompt_tokens":`...), int64(u.PromptTokens), 10)
	b = strconv.AppendInt(append(b, `,"completion_tokens":`...), int64(u.CompletionTokens), 10)
	b = strconv.AppendInt(append(b, `,"total_tokens":`...), int64(u.TotalTokens), 10)
	if u.PromptTokensDetails != nil {
		b = appendStruct(append(b, `,"prompt_tokens_details":`...), u.PromptTokensDetails, nil)
	}
	if u.CompletionTokensDetails != nil {
		b = appendStruct(append(b, `,"completion_tokens_details":`...), u.CompletionTokensDetails, nil)
	}
	if u.Extra != nil {
		b = appendMembers(b, u.Extra, usageFields, false)
	}
	return append(b, '}')
}

// chatMessageFields are ChatMessage's fields, for its members in Extra.
var chatMessageFields = (&pb.ChatMessage{}).ProtoReflect().Descriptor().Fields()

// appendChatMessage is appendObject for the message a long conversation has
// hundreds of (a gRPC caller's history), without reflection: the same members
// in the same order (TestChatMessageFastPathIsTheGenericOne holds it to that).
func appendChatMessage(b []byte, m *pb.ChatMessage) []byte {
	b = append(b, `{"role":`...)
	b = appendString(b, m.Role)
	if m.Content != nil {
		b = append(b, `,"content":`...)
		b = appendValue(b, m.Content)
	}
	for _, f := range [...]struct {
		name string
		v    *string
	}{{`,"name":`, m.Name}, {`,"tool_call_id":`, m.ToolCallId}, {`,"refusal":`, m.Refusal}} {
		if f.v != nil {
			b = append(b, f.name...)
			b = appendString(b, *f.v)
		}
	}
	if m.Extra != nil {
		b = appendMembers(b, m.Extra, chatMessageFields, false)
	}
	return append(b, '}')
}

// appendObject writes m; a raw JSON field's bytes go through raw when it is set
// (AppendPieces), and are copied in otherwise. up, when not nil, gives the
// values of the members it sets (m is a chat request).
func appendObject(b []byte, m protoreflect.Message, raw func(b, json []byte) []byte, up *Upstream) []byte {
	md := m.Descriptor()
	switch md.FullName() {
	case "google.protobuf.Struct":
		return appendStruct(b, m.Interface().(*structpb.Struct), nil)
	case "google.protobuf.Value":
		return appendValue(b, m.Interface().(*structpb.Value))
	case "google.protobuf.ListValue":
		return appendList(b, m.Interface().(*structpb.ListValue))
	}
	b = append(b, '{')
	first := true
	plan := planOf(md)
	for i := range plan.fields {
		f := &plan.fields[i]
		var v protoreflect.Value
		set := true
		switch {
		case up != nil && f.up != upNone:
			v, set = up.value(f.up)
		case f.list:
			v = m.Get(f.fd)
			set = v.List().Len() > 0 || f.always
		case f.isMap:
			v = m.Get(f.fd)
			set = v.Map().Len() > 0
		case f.presence:
			if set = m.Has(f.fd); set {
				v = m.Get(f.fd)
			}
		default:
			v = m.Get(f.fd)
		}
		if !set || f.raw && len(v.Bytes()) == 0 {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendString(b, f.name)
		b = append(b, ':')
		switch {
		case !f.raw:
			b = appendField(b, v, f.fd)
		case raw != nil: // JSON as it arrived
			b = raw(b, v.Bytes())
		default:
			b = append(b, v.Bytes()...)
		}
	}
	if plan.extra != nil && m.Has(plan.extra) {
		extra := m.Get(plan.extra).Message().Interface().(*structpb.Struct)
		b = appendMembers(b, extra, plan.known, first)
	}
	return append(b, '}')
}

// appendMembers writes extra's members (sorted, for stable output) into an open
// object, skipping names that a known field already wrote (not "extra" itself,
// which is never written under its name: an unknown member of that name is kept).
func appendMembers(b []byte, extra *structpb.Struct, known protoreflect.FieldDescriptors, first bool) []byte {
	keys := make([]string, 0, len(extra.GetFields()))
	for k := range extra.GetFields() {
		if known != nil && k != ExtraField && known.ByName(protoreflect.Name(k)) != nil {
			continue
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendString(b, k)
		b = append(b, ':')
		b = appendValue(b, extra.Fields[k])
	}
	return b
}

func appendField(b []byte, v protoreflect.Value, fd protoreflect.FieldDescriptor) []byte {
	switch {
	case fd.IsList():
		list := v.List()
		b = append(b, '[')
		for i := 0; i < list.Len(); i++ {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendSingle(b, list.Get(i), fd)
		}
		return append(b, ']')
	case fd.IsMap():
		mp := v.Map()
		keys := make([]string, 0, mp.Len())
		mp.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
			keys = append(keys, k.String())
			return true
		})
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = appendSingle(b, mp.Get(protoreflect.ValueOfString(k).MapKey()), fd.MapValue())
		}
		return append(b, '}')
	}
	return appendSingle(b, v, fd)
}

func appendSingle(b []byte, v protoreflect.Value, fd protoreflect.FieldDescriptor) []byte {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return appendMessage(b, v.Message())
	case protoreflect.StringKind:
		return appendString(b, v.String())
	case protoreflect.BoolKind:
		return strconv.AppendBool(b, v.Bool())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return strconv.AppendInt(b, v.Int(), 10)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return strconv.AppendUint(b, v.Uint(), 10)
	case protoreflect.DoubleKind, protoreflect.FloatKind:
		return appendFloat(b, v.Float())
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return appendString(b, string(ev.Name()))
		}
		return strconv.AppendInt(b, int64(v.Enum()), 10)
	case protoreflect.BytesKind:
		return appendString(b, string(v.Bytes()))
	}
	return append(b, "null"...)
}

func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.AppendInt(b, int64(f), 10)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

func appendStruct(b []byte, s *structpb.Struct, known protoreflect.FieldDescriptors) []byte {
	b = append(b, '{')
	b = appendMembers(b, s, known, true)
	return append(b, '}')
}

func appendList(b []byte, l *structpb.ListValue) []byte {
	b = append(b, '[')
	for i, v := range l.GetValues() {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendValue(b, v)
	}
	return append(b, ']')
}

func appendValue(b []byte, v *structpb.Value) []byte {
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		return appendString(b, k.StringValue)
	case *structpb.Value_NumberValue:
		return appendFloat(b, k.NumberValue)
	case *structpb.Value_BoolValue:
		return strconv.AppendBool(b, k.BoolValue)
	case *structpb.Value_StructValue:
		return appendStruct(b, k.StructValue, nil)
	case *structpb.Value_ListValue:
		return appendList(b, k.ListValue)
	}
	return append(b, "null"...)
}

const hex = "0123456789abcdef"

// appendString writes s as a JSON string; invalid UTF-8 becomes U+FFFD.
func appendString[T string | []byte](b []byte, s T) []byte {
	b, _ = appendStr(b, s, false)
	return b
}

// appendStr is appendString; with strict, invalid UTF-8 stops it instead (false:
// a string protobuf-go would refuse, see TranscodeMessage). Sixty-four bytes
// are classified at a time where bytemask is fast, else plain ASCII is read
// eight bytes at a time to the first byte to look at (stopMask); each byte to
// look at is written by appendStop (an ASCII one found by blocks: by
// appendEscape, inline), and runs of plain text are copied in one append.
func appendStr[T string | []byte](b []byte, s T, strict bool) ([]byte, bool) {
	return appendStrBy(b, s, strict, bytemask.Fast)
}

// appendStrBy is appendStr, by blocks or not (the tests hold one to the other).
// By blocks, where the machine has it, a string of a block or more is checked
// as UTF-8 as it is escaped, in one pass (bytemask.EscapeText), which writes
// most strings whole; where that stops (an error, U+2028 or U+2029, a control
// character written \u00XX, too little room in b), the reading below goes on
// from the start of the character it stopped in (whose bytes it wrote one for
// one). That reading first checks what is left as UTF-8 in one pass
// (bytemask.CheckText); when it is valid, its characters of 0x80 and above go
// as they are without reading each one (but U+2028 and U+2029, when it holds
// them).
func appendStrBy[T string | []byte](b []byte, s T, strict, blocks bool) ([]byte, bool) {
	b = append(b, '"')
	if blocks && bytemask.Escaper && len(s) >= 64 {
		var read int
		if b, read = bytemask.EscapeText(b, bytesOf(s)); read == len(s) {
			return append(b, '"'), true
		}
		c := bytemask.CharStart(bytesOf(s), read)
		b, s = b[:len(b)-(read-c)], s[c:]
	}
	start, i, n := 0, 0, len(s)
	ok, valid, seps := true, false, true
	data := bytesOf(s)
	if blocks && n >= 64 {
		if valid, seps = bytemask.CheckText(data); !valid && strict {
			return b, false
		}
	}
	if valid && !seps {
		b, start, i = appendPlainBlocks(b, s) // the whole blocks: the loop below has only the rest
	}
	for i < n {
		if blocks && i+64 <= n {
			special, h := bytemask.Stops((*[64]byte)(data[i : i+64]))
			base := i
			for stops := special | h; stops != 0; stops &= stops - 1 {
				p := base + bits.TrailingZeros64(stops)
				if p < i || valid && asIs(s, p) {
					continue // inside a character already read; a valid one that goes as it is
				}
				if c := s[p]; c < utf8.RuneSelf { // appendStop's ASCII case, inline
					b = appendEscape(append(b, s[start:p]...), c)
					start, i = p+1, p+1
					continue
				}
				if b, start, i, ok = appendStop(b, s, start, p, strict); !ok {
					return b, false
				}
			}
			i = max(i, base+64)
			continue
		}
		if i+8 <= n {
			w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
			m := stopMask(w)
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3
		}
		if plainASCII[s[i]] || valid && asIs(s, i) {
			i++ // the tail, byte by byte
			continue
		}
		if b, start, i, ok = appendStop(b, s, start, i, strict); !ok {
			return b, false
		}
	}
	b = append(b, s[start:]...)
	return append(b, '"'), true
}

// appendPlainBlocks writes the whole blocks of 64 bytes of s, valid UTF-8
// without U+2028 or U+2029 (its characters of 0x80 and above all go as they
// are), and may write the bytes after them too. Where the machine has it,
// bytemask.EscapeBlocks writes the blocks (and those bytes) until it meets
// one with a control character written \u00XX or has too little room in b;
// that block is written here, and EscapeBlocks goes on from the next.
// Elsewhere, the quotes, backslashes and control characters of 32 blocks at
// a time are found in one call (bytemask.Specials) and written one by one.
// It returns where the plain text not written yet starts and where reading
// stopped (the end of the blocks, or of s), for appendStrBy's loop to go on
// from.
func appendPlainBlocks[T string | []byte](b []byte, s T) (_ []byte, start, i int) {
	data := bytesOf(s)
	var specials [32]uint64
	for n := len(data); i+64 <= n; {
		k := min((n-i)>>6, len(specials))
		if bytemask.Escaper {
			b = append(b, data[start:i]...) // EscapeBlocks writes from i
			var read int
			b, read = bytemask.EscapeBlocks(b, data[i:])
			i += read
			start = i
			if i+64 > n {
				break
			}
			k = 1 // the block EscapeBlocks did not write
		}
		bytemask.Specials(data[i:], specials[:k])
		for _, m := range specials[:k] {
			for ; m != 0; m &= m - 1 {
				p := i + bits.TrailingZeros64(m)
				b = appendEscape(appendRun(b, data, start, p), s[p])
				start = p + 1
			}
			i += 64
		}
	}
	return b, start, i
}

// appendRun appends data[start:p]. A run of up to 16 bytes, with 16 bytes of
// data from start and room for 16 in b, goes in one fixed-size move (the bytes
// past p are written over next) instead of a call of memmove: in text that
// escapes every few words, most runs are short (a 32-byte move was slower).
func appendRun(b, data []byte, start, p int) []byte {
	if l := len(b); p-start <= 16 && len(data)-start >= 16 && cap(b)-l >= 16 {
		*(*[16]byte)(b[l : l+16]) = *(*[16]byte)(data[start : start+16])
		return b[:l+p-start]
	}
	return append(b, data[start:p]...)
}

// asIs says whether s[i], in valid UTF-8, is a byte of a character of 0x80 and
// above that is written as it is (all but U+2028 and U+2029).
func asIs[T string | []byte](s T, i int) bool {
	return s[i] >= utf8.RuneSelf && !lineSep(s, i)
}

// lineSep says whether s[i:] starts with U+2028 or U+2029 (escaped, for
// JavaScript's sake, as encoding/json does).
func lineSep[T string | []byte](s T, i int) bool {
	return s[i] == 0xE2 && i+2 < len(s) && s[i+1] == 0x80 && s[i+2]&0xFE == 0xA8
}

// appendStop writes what s[i] (a quote, a backslash, a control character or
// the first byte of a character of 0x80 and above) needs: an escape, or U+FFFD
// for invalid UTF-8 (false with strict), after the plain text s[start:i]; or
// nothing, for a character that goes as it is. It returns where the plain
// text now starts and where reading goes on.
func appendStop[T string | []byte](b []byte, s T, start, i int, strict bool) (_ []byte, _, _ int, ok bool) {
	c := s[i]
	if c >= utf8.RuneSelf {
		switch size := validLen(s, i); {
		case size == 0:
			if strict {
				return b, start, i, false
			}
			b = append(b, s[start:i]...)
			return append(b, `\ufffd`...), i + 1, i + 1, true
		case size == 3 && lineSep(s, i): // U+2028, U+2029
			b = append(b, s[start:i]...)
			return append(b, '\\', 'u', '2', '0', '2', hex[s[i+2]&0xF]), i + 3, i + 3, true
		default:
			return b, start, i + size, true
		}
	}
	return appendEscape(append(b, s[start:i]...), c), i + 1, i + 1, true
}

// appendEscape writes the escape of c, a quote, a backslash or a control
// character.
func appendEscape(b []byte, c byte) []byte {
	if e := escapeOf[c]; e != 0 {
		return append(b, '\\', e)
	}
	return append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
}

// escapeOf is the letter of the two-byte escape of a character that has one
// (the rest are written \u00XX).
var escapeOf = [256]byte{'"': '"', '\\': '\\', '\n': 'n', '\r': 'r', '\t': 't'}

// bytesOf is the bytes of s, not copied (only read): a string's and a slice's
// headers both start with the pointer to their bytes.
func bytesOf[T string | []byte](s T) []byte {
	return unsafe.Slice(unsafe.StringData(*(*string)(unsafe.Pointer(&s))), len(s))
}
