package openaijson

import (
	"encoding/binary"
	"math/bits"
	"sync/atomic"
	"unicode/utf16"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/bytemask"
)

// Raw JSON fields. A bytes field named NAME_json holds the JSON of the member
// NAME exactly as it arrived (ChatCompletionRequest.messages_json is the request's
// "messages"): the encoder writes those bytes as that member, and no JSON member
// is named NAME_json. UnmarshalChat fills messages_json instead of decoding the
// conversation when it can; everything else reads the conversation through
// Messages.

const rawSuffix = "_json"

// rawName is the member a raw JSON field stands for, or "" for other fields.
func rawName(fd protoreflect.FieldDescriptor) string {
	if fd.Kind() != protoreflect.BytesKind || fd.IsList() || len(fd.Name()) <= len(rawSuffix) ||
		string(fd.Name()[len(fd.Name())-len(rawSuffix):]) != rawSuffix {
		return ""
	}
	return string(fd.Name()[:len(fd.Name())-len(rawSuffix)])
}

// rawCheck is what checking a value without building it found.
type rawCheck struct {
	// mend is set when decoding would change the text (invalid UTF-8, a lone
	// surrogate escape): such input is decoded, so upstreams see what they always did.
	mend bool
}

// checkRawMessages judges a "messages" member (ChatMessage objects) as decoding it
// would, building nothing but counting the Values it would build. ok is false
// when the member must be decoded instead: it is not valid as messages (decoding
// then says precisely why), decoding would mend its text, or it is empty or has
// a message without a role (the chat handler's own errors come from the decoded
// form).
func (s *scanner) checkRawMessages(md protoreflect.MessageDescriptor) (ok bool) {
	if s.peek() != '[' {
		return false
	}
	ix := s.index(md)
	roleAt := ix.find([]byte("role"))
	var c rawCheck
	n, roles := 0, true
	err := s.array(func(int) error {
		n++
		if s.peek() != '{' {
			return errType
		}
		role := false
		err := s.checkRawObject(ix, &c, func(i int) {
			if i == roleAt {
				role = s.peek() == '"' && s.pos+1 < len(s.data) && s.data[s.pos+1] != '"'
			}
		})
		roles = roles && role
		return err
	})
	return err == nil && !c.mend && n > 0 && roles
}

// checkRawObject checks an object for the message ix indexes, as
// decoder.message decodes it; seen hears each known field (its place in ix)
// just before its value is checked. A known field repeated is told by its
// place (a bit each), another key by noteKey.
func (s *scanner) checkRawObject(ix *fieldIndex, c *rawCheck, seen func(int)) error {
	var ks keySet
	var known uint64
	return s.object(func(key []byte) error {
		i := ix.find(key)
		if i < 0 || i >= 64 {
			c.noteKey(&ks, key)
		} else if known&(1<<i) != 0 {
			c.mend = true // repeated: decoding keeps the last
		} else {
			known |= 1 << i
		}
		if i < 0 {
			if ix.extra == nil {
				return s.skip()
			}
			return s.countValue(c) // kept in extra, as a Value
		}
		if seen != nil {
			seen(i)
		}
		return s.checkRawField(ix.checks[i], c)
	})
}

// fieldCheck is how the raw check reads a field's value, worked out once per
// field: protoreflect's accessors are interface calls, and a history asks
// them of every member of every message.
type fieldCheck struct {
	shape fieldShape
	kind  valueKind                    // of the value, or of each element
	elem  protoreflect.FieldDescriptor // the field; a map's: its value field
	sub   atomic.Pointer[fieldIndex]   // kind valueObject: its message's index, once asked for
}

type fieldShape uint8

const (
	shapeOne fieldShape = iota
	shapeList
	shapeMap
)

type valueKind uint8

const (
	valueScalar valueKind = iota // a number or a bool (scanner.plain)
	valueString
	valueEnum   // none in a chat message: refused, and decoding says why
	valueAny    // google.protobuf.Value
	valueStruct // google.protobuf.Struct
	valueList   // google.protobuf.ListValue
	valueObject // another message
)

func checkOf(fd protoreflect.FieldDescriptor) *fieldCheck {
	ck := &fieldCheck{elem: fd}
	switch {
	case fd.IsMap():
		ck.shape, ck.elem = shapeMap, fd.MapValue()
	case fd.IsList():
		ck.shape = shapeList
	}
	switch md := ck.elem.Message(); {
	case md != nil && md.FullName() == "google.protobuf.Value":
		ck.kind = valueAny
	case md != nil && md.FullName() == "google.protobuf.Struct":
		ck.kind = valueStruct
	case md != nil && md.FullName() == "google.protobuf.ListValue":
		ck.kind = valueList
	case md != nil:
		ck.kind = valueObject
	case ck.elem.Kind() == protoreflect.StringKind:
		ck.kind = valueString
	case ck.elem.Kind() == protoreflect.EnumKind:
		ck.kind = valueEnum
	}
	return ck
}

// index is the index of a valueObject field's message.
func (ck *fieldCheck) index() *fieldIndex {
	if ix := ck.sub.Load(); ix != nil {
		return ix
	}
	ix := indexOf(ck.elem.Message())
	ck.sub.Store(ix)
	return ix
}

// checkRawField checks one known member as decoder.field decodes it. A null
// (but a Value's) or an empty list or map leaves the field unset, and the
// encoder writes nothing for it where the bytes would keep the member: such a
// message is decoded instead (c.mend).
func (s *scanner) checkRawField(ck *fieldCheck, c *rawCheck) error {
	b := s.peek()
	if b == 'n' && (ck.shape != shapeOne || ck.kind != valueAny) {
		c.mend = true
		return s.lit("null")
	}
	n := 0 // a list's elements or a map's members
	switch ck.shape {
	case shapeMap:
		if b != '{' {
			return errType
		}
		err := s.object(func([]byte) error { n++; return s.checkRawScalar(ck.elem, c) })
		c.mend = c.mend || n == 0
		return err
	case shapeList:
		if b != '[' {
			return errType
		}
		err := s.array(func(int) error {
			n++
			if ck.kind >= valueAny && s.peek() == 'n' {
				return errType // a list's message may not be null
			}
			return s.checkRawValue(ck, c)
		})
		c.mend = c.mend || n == 0
		return err
	}
	return s.checkRawValue(ck, c)
}

// checkRawValue checks one value (a field's, or a list's element) as
// decoder.field decodes it.
func (s *scanner) checkRawValue(ck *fieldCheck, c *rawCheck) error {
	switch ck.kind {
	case valueString:
		if s.peek() != '"' {
			return errType
		}
		return s.rawStr(c)
	case valueAny:
		return s.countValue(c)
	case valueStruct:
		if s.peek() != '{' {
			return errType
		}
		return s.object(func([]byte) error { return s.countValue(c) })
	case valueList:
		if s.peek() != '[' {
			return errType
		}
		return s.countValue(c)
	case valueObject:
		if s.peek() != '{' {
			return errType
		}
		return s.checkRawObject(ck.index(), c, nil)
	}
	return s.checkRawScalar(ck.elem, c)
}

// checkRawScalar checks a scalar as decoder.scalar reads it.
func (s *scanner) checkRawScalar(fd protoreflect.FieldDescriptor, c *rawCheck) error {
	switch fd.Kind() {
	case protoreflect.StringKind:
		if s.peek() != '"' {
			return errType
		}
		return s.rawStr(c)
	case protoreflect.EnumKind:
		return errType // no enum in a chat message: decode, and let it say
	}
	_, msg, err := s.plain(fd)
	if msg != "" {
		return errType
	}
	return err
}

// countValue checks any value as scanner.value reads it, counting each Value it
// would build against the same budget.
func (s *scanner) countValue(c *rawCheck) error {
	if err := s.newValue(); err != nil {
		return err
	}
	switch s.peek() {
	case '{':
		var ks keySet
		return s.object(func(key []byte) error { c.noteKey(&ks, key); return s.countValue(c) })
	case '[':
		return s.array(func(int) error { return s.countValue(c) })
	case '"':
		return s.rawStr(c)
	}
	return s.walk(true) // a literal, or a number within float64's range
}

// keySet holds an object's keys so far, to tell a repeated one.
type keySet struct {
	keys [16][]byte
	n    int
}

// noteKey marks c as needing decoding when key would not come through as it is:
// a repeated key (decoding keeps the last; bytes kept as they are would keep
// every one), a non-ASCII key (it may hold invalid UTF-8 or a lone surrogate
// decoding would mend; rare enough to decode), or an object with more keys than
// keySet holds (too many to compare cheaply).
func (c *rawCheck) noteKey(ks *keySet, key []byte) {
	for _, b := range key {
		if b >= utf8.RuneSelf {
			c.mend = true
			return
		}
	}
	for _, k := range ks.keys[:ks.n] {
		if string(k) == string(key) {
			c.mend = true
			return
		}
	}
	if ks.n == len(ks.keys) {
		c.mend = true
		return
	}
	ks.keys[ks.n] = key
	ks.n++
}

// rawStr reads past a string (the opening quote is next) as str would read it,
// allocating nothing; it notes in c when str would mend the text (invalid UTF-8,
// a lone surrogate escape).
func (s *scanner) rawStr(c *rawCheck) error {
	if !bytemask.Fast {
		return s.rawStrFrom(c, s.pos+1)
	}
	return s.rawStrBlocks(c)
}

// rawStrBlocks is rawStr sixty-four bytes at a time while they last, then byte
// by byte (rawStrFrom). Blocks that hold nothing to look at closer, and a last
// one that holds only the closing quote, are read in one call
// (bytemask.PlainRun); the first that holds more is read by rawBlock, and when
// that call read none, the next four blocks too before it is tried again (text
// dense with \u escapes stops it at every block).
func (s *scanner) rawStrBlocks(c *rawCheck) error {
	data := s.data
	i := s.pos + 1
	var m bytemask.Masks
	for wait := 1; i+64 <= len(data); wait-- {
		if wait <= 0 {
			j, end := bytemask.PlainRun(data, i)
			if end {
				s.pos = j
				return nil
			}
			if j == i {
				wait = 5
			}
			if i = j; i+64 > len(data) {
				break
			}
		}
		if i >= 3 {
			bytemask.TextBlock((*[67]byte)(data[i-3:i+64]), &m)
		} else {
			loadTextAtStart(data, i, &m)
		}
		if m.Backslash|m.Invalid == 0 { // no escape, valid UTF-8: the first quote ends it
			stop := m.Quote | m.Control
			if stop == 0 {
				i += 64
				continue
			}
			if m.Quote&(stop&-stop) == 0 {
				return errSyntax // a control character
			}
			s.pos = i + bits.TrailingZeros64(stop) + 1
			return nil
		}
		next, end, err := rawBlock(data, i, &m, c)
		if err != nil {
			return err
		}
		if end {
			s.pos = next
			return nil
		}
		i = next
	}
	return s.rawStrFrom(c, bytemask.CharStart(data, i)) // the blocks judge a byte only with the ones after it
}

// loadTextAtStart loads m with the masks of data[i:i+64] (i < 3) and the
// bytes before, if any.
func loadTextAtStart(data []byte, i int, m *bytemask.Masks) {
	var w [67]byte // zero bytes before the data: ASCII
	copy(w[3-i:], data[:i+64])
	m.LoadText(&w)
}

// rawBlock reads the string's bytes in data[i:i+64] (i is not inside an
// escape) from m: escapes, control characters and UTF-8 errors before the
// first unescaped quote are judged from the masks (an error at the quote is a
// character it cuts short), each \u escape read where it stands. It returns
// whether that quote ends the string in this block, and where reading goes on:
// past the quote, or the first byte not yet read (a backslash at the block's
// last byte is read with the next block; an escape crossing into it, past).
func rawBlock(data []byte, i int, m *bytemask.Masks, c *rawCheck) (next int, end bool, err error) {
	esc := bytemask.Escaped(m.Backslash)
	quotes := m.Quote &^ esc
	before := ^uint64(0) // the bits before the closing quote
	if quotes != 0 {
		before = quotes&-quotes - 1
	}
	if (m.Control|esc&^(m.EscapeChar|m.U))&before != 0 {
		return 0, false, errSyntax // a control character, or an escape of no character
	}
	if m.Invalid&(before<<1|1) != 0 {
		c.mend = true // decoding turns the invalid bytes into U+FFFD
	}
	read := i // the end of the last \u escape read
	for e := esc & m.U & before; e != 0; e &= e - 1 {
		p := i + bits.TrailingZeros64(e)
		if p < read {
			continue // the second half of a surrogate pair
		}
		n, mend, ok := escapeAt(data, p-1)
		if !ok {
			return 0, false, errSyntax
		}
		c.mend = c.mend || mend
		read = p - 1 + n
	}
	if quotes != 0 {
		return i + bits.TrailingZeros64(quotes) + 1, true, nil
	}
	next = i + 64
	if (m.Backslash&^esc)>>63 != 0 {
		next = i + 63 // its escaped byte is in the next block
	}
	return max(next, read), false, nil
}

// rawStrFrom is rawStr from data[i] (not inside an escape or a character) on,
// eight bytes at a time to the first byte to look at, then that byte.
func (s *scanner) rawStrFrom(c *rawCheck, i int) error {
	data := s.data
	n := len(data)
	for {
		if i+8 <= n {
			// Plain ASCII text, eight bytes at a time: the lowest byte stopMask
			// marks is the first one to look at.
			w := binary.LittleEndian.Uint64(data[i:])
			m := stopMask(w)
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3
		} else {
			for i < n && plainASCII[data[i]] {
				i++
			}
			if i >= n {
				return errSyntax
			}
		}
		switch b := data[i]; {
		case b >= utf8.RuneSelf:
			for i < n && data[i] >= utf8.RuneSelf { // a run of them (CJK text is one)
				i += utf8Len(data, i, c)
			}
		case b == '"':
			s.pos = i + 1
			return nil
		case b == '\\':
			if i+1 < n && shortEscape[data[i+1]] {
				i += 2
				continue
			}
			n, mend, ok := escapeAt(data, i)
			if !ok {
				return errSyntax
			}
			c.mend = c.mend || mend
			i += n
		default:
			return errSyntax // a control character
		}
	}
}

// utf8Len is the length of the UTF-8 sequence at data[i] (a byte of 0x80 and
// above); an invalid one is one byte, noted in c: decoding turns it into U+FFFD.
func utf8Len(data []byte, i int, c *rawCheck) int {
	if n := validLen(data, i); n > 0 {
		return n
	}
	c.mend = true
	return 1
}

// validLen is the length of the valid UTF-8 sequence that starts at s[i] (a byte
// of 0x80 and above), or 0 if none does: utf8.DecodeRune's ranges (no overlong
// forms, no surrogates, nothing above U+10FFFF), checked inline.
func validLen[T string | []byte](s T, i int) int {
	b := s[i]
	size, lo, hi := 0, byte(0x80), byte(0xBF) // the second byte's range
	switch {
	case b < 0xC2 || b > 0xF4:
		return 0
	case b <= 0xDF:
		size = 2
	case b <= 0xEF:
		size = 3
		if b == 0xE0 {
			lo = 0xA0
		} else if b == 0xED {
			hi = 0x9F
		}
	default:
		size = 4
		if b == 0xF0 {
			lo = 0x90
		} else if b == 0xF4 {
			hi = 0x8F
		}
	}
	if i+size > len(s) || s[i+1] < lo || s[i+1] > hi {
		return 0
	}
	for j := i + 2; j < i+size; j++ {
		if s[j]&0xC0 != 0x80 {
			return 0
		}
	}
	return size
}

// stopMask has the high bit set in the lowest byte of w that is not plain ASCII
// text of a string: a quote, a backslash, a control character or 0x80 and above
// (the zero-byte test, (x - 0x01..) & 0x80..: its false positives lie only above
// a true match, and a byte it flags for being 0x81 or more after the XOR is 0x80
// or more itself, flagged anyway).
func stopMask(w uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q, b := w^(ones*'"'), w^(ones*'\\')
	return ((q - ones) | (b - ones) | (w - ones*0x20) | w) & highs
}

// plainASCII marks the bytes a string holds as they are and that are ASCII.
var plainASCII = func() (t [256]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\'
	}
	return t
}()

// shortEscape marks the characters of the two-byte escapes (\n, \", ...).
var shortEscape = [256]bool{'"': true, '\\': true, '/': true, 'b': true, 'f': true, 'n': true, 'r': true, 't': true}

// escapeAt reads the escape at data[i] (a backslash) as strSlow does: its
// length, and whether decoding it mends (a lone surrogate becomes U+FFFD).
func escapeAt(data []byte, i int) (n int, mend, ok bool) {
	if i+1 >= len(data) {
		return 0, false, false
	}
	switch data[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2, false, true
	case 'u':
	default:
		return 0, false, false
	}
	r, ok := hexAt(data, i+2)
	if !ok {
		return 0, false, false
	}
	if !utf16.IsSurrogate(r) {
		return 6, false, true
	}
	if i+7 < len(data) && data[i+6] == '\\' && data[i+7] == 'u' {
		if r2, ok := hexAt(data, i+8); ok && utf16.DecodeRune(r, r2) != utf8.RuneError {
			return 12, false, true
		}
	}
	return 6, true, true // a lone surrogate: what follows is read on its own
}

// hexAt reads the four hex digits at data[i:], as hex4 does.
func hexAt(data []byte, i int) (rune, bool) {
	if len(data)-i < 4 {
		return 0, false
	}
	var r rune
	for _, b := range data[i : i+4] {
		switch {
		case b >= '0' && b <= '9':
			r = r<<4 | rune(b-'0')
		case b >= 'a' && b <= 'f':
			r = r<<4 | rune(b-'a'+10)
		case b >= 'A' && b <= 'F':
			r = r<<4 | rune(b-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// rawMessagesField is ChatCompletionRequest-like md's raw conversation field
// and the messages field it stands for, when md has both.
func rawMessagesField(md protoreflect.MessageDescriptor) (raw, list protoreflect.FieldDescriptor) {
	raw = md.Fields().ByName("messages_json")
	list = md.Fields().ByName("messages")
	if raw == nil || list == nil || rawName(raw) != "messages" || !list.IsList() || list.Message() == nil {
		return nil, nil
	}
	return raw, list
}

// UnmarshalChat is Unmarshal for a chat request that keeps its "messages" member
// as bytes (messages_json, aliasing data) when decoding it would give exactly
// those messages back: the member is checked as decoding checks it, with the
// same limits, and decoded instead when it has any fault (so errors are
// Unmarshal's own, with the same param), when decoding would mend its text, or
// when it is empty or a message has no role.
func UnmarshalChat(data []byte, msg proto.Message) error { return unmarshal(data, msg, true) }

// rawMessages tries to keep the "messages" member (next in d.s) as bytes in
// m's raw field; it reports whether it did, and otherwise leaves the scanner
// where it was.
func (d *decoder) rawMessages(m protoreflect.Message, raw, list protoreflect.FieldDescriptor) bool {
	s := d.s
	s.ws()
	start := s.pos
	if !s.checkRawMessages(list.Message()) {
		return false
	}
	m.Clear(list)
	m.Set(raw, protoreflect.ValueOfBytes(d.s.data[start:s.pos]))
	d.s = s
	return true
}

// KeepMessagesJSON reports whether req's messages_json, bytes a gRPC caller
// sent, may go upstream as they are: one JSON array (and nothing after it) that
// passes the check UnmarshalChat gives a REST body's "messages" member, with
// the same limits (its depth counted as inside the request object) — valid as
// messages, nothing decoding would mend, not empty, every message with a role.
// False: decode it (Messages), which says what is wrong with it, or mends it.
func KeepMessagesJSON(req *pb.ChatCompletionRequest) bool {
	raw := req.GetMessagesJson()
	if len(raw) == 0 {
		return false
	}
	s := scanner{data: raw, depth: 1}
	s.ws()
	return s.checkRawMessages(chatMessage) && s.atEnd()
}

var chatMessage = (&pb.ChatMessage{}).ProtoReflect().Descriptor()

// Messages returns req's conversation: its messages, or messages_json decoded
// (with Unmarshal's limits and errors, their param under "messages").
func Messages(req *pb.ChatCompletionRequest) ([]*pb.ChatMessage, error) {
	raw := req.GetMessagesJson()
	if len(raw) == 0 {
		return req.GetMessages(), nil
	}
	// One JSON array and nothing else: bytes like `[...],"model":"x"` would
	// otherwise smuggle members into the body they are spliced into.
	if s := (scanner{data: raw}); s.peek() != '[' || s.skip() != nil || !s.atEnd() {
		return nil, &Error{Param: "messages_json", Msg: "must be one JSON array of messages"}
	}
	data := make([]byte, 0, len(raw)+16)
	data = append(append(append(data, `{"messages":`...), raw...), '}')
	var tmp pb.ChatCompletionRequest
	if err := Unmarshal(data, &tmp); err != nil {
		return nil, err
	}
	return tmp.Messages, nil
}

// Decoded returns req with its conversation decoded: req itself when it has no
// messages_json, else a copy whose messages are messages_json decoded. For
// readers of the whole request (translation to another wire, the simulator).
func Decoded(req *pb.ChatCompletionRequest) (*pb.ChatCompletionRequest, error) {
	if len(req.GetMessagesJson()) == 0 {
		return req, nil
	}
	msgs, err := Messages(req)
	if err != nil {
		return nil, err
	}
	out := &pb.ChatCompletionRequest{}
	dst := out.ProtoReflect()
	req.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Name() != "messages_json" {
			dst.Set(fd, v) // shares the values: callers must not modify them
		}
		return true
	})
	out.Messages = msgs
	return out, nil
}
