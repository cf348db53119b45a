// Package openaijson converts between OpenAI-shaped JSON and Switchyard's protos.
//
// It differs from protojson where OpenAI's wire format needs it:
//   - names are the proto (snake_case) names, which are OpenAI's;
//   - 64-bit integers are JSON numbers, never strings;
//   - a message's members that match no field are kept in its "extra" field
//     (a google.protobuf.Struct) and written back as top-level members, so unknown
//     request and response members pass through in both directions;
//   - fields OpenAI omits when unset are proto3 optional and left out when unset;
//     plain scalars are always written (choices[].index: 0 included).
//
// Decoding is a single pass over the bytes (no intermediate maps), because it sits
// on every request, response and stream chunk. It accepts what encoding/json
// accepts and reads strings and numbers as it does (fuzz tests hold the two
// together), but for nesting past MaxDepth, which every decoder here refuses. A
// member given twice counts the last time. Errors are *Error, and say nothing of
// whose bytes were bad: callers do ("request body: ...").
package openaijson

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
)

// ExtraField is the name of the Struct field that collects unknown members.
const ExtraField = "extra"

// Unmarshal decodes the JSON object data into msg, replacing its contents. A
// member given twice counts once, the last time (as with Python's json module and
// encoding/json's maps). Errors are *Error.
func Unmarshal(data []byte, msg proto.Message) error { return unmarshal(data, msg, false) }

// unmarshal is Unmarshal, keeping a chat request's conversation as bytes when
// raw is set (UnmarshalChat).
func unmarshal(data []byte, msg proto.Message, raw bool) error {
	proto.Reset(msg)
	d := &decoder{s: scanner{data: data}, raw: raw}
	if d.s.peek() != '{' {
		return failure(data, nil)
	}
	err := d.message(msg.ProtoReflect())
	if err == nil && d.s.atEnd() {
		return nil
	}
	proto.Reset(msg)
	return failure(data, err)
}

// pathElem is one step of the path to the member being decoded.
type pathElem struct {
	key   string
	index int // -1 for object members
}

type decoder struct {
	s    scanner
	path []pathElem
	// raw keeps a chat request's "messages" as bytes where it can (UnmarshalChat).
	raw bool
}

func (d *decoder) push(key string)       { d.path = append(d.path, pathElem{key: key, index: -1}) }
func (d *decoder) pushIndex(i int)       { d.path = append(d.path, pathElem{index: i}) }
func (d *decoder) pop()                  { d.path = d.path[:len(d.path)-1] }
func (d *decoder) fail(msg string) error { return &Error{Param: d.param(), Msg: msg} }

// valueError names the member whose number is out of range, and says where the
// values budget ran out; other errors pass.
func (d *decoder) valueError(err error) error {
	switch err {
	case errRange:
		return d.fail("number out of range")
	case errTooManyValues:
		return &Error{Msg: fmt.Sprintf("%v (at byte %d, in '%s')", ErrTooManyValues, d.s.pos, d.param()),
			Err: ErrTooManyValues, Offset: d.s.pos}
	}
	return err
}

func (d *decoder) param() string {
	var b strings.Builder
	for _, p := range d.path {
		if p.index >= 0 {
			b.WriteString("[" + strconv.Itoa(p.index) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p.key)
	}
	return b.String()
}

// fieldIndex is a message's fields by JSON name, without its extra field.
type fieldIndex struct {
	names  []string
	fds    []protoreflect.FieldDescriptor
	checks []*fieldCheck // how the raw check reads each (raw.go)
	extra  protoreflect.FieldDescriptor
}

// get is the field named key (nil: none). A scan, lengths compared first:
// messages have a few dozen fields at most, and this beats hashing the key
// (a map lookup per member was ~3 % of the CPU of a 512 KB prompt of short
// messages).
func (ix *fieldIndex) get(key []byte) protoreflect.FieldDescriptor {
	if i := ix.find(key); i >= 0 {
		return ix.fds[i]
	}
	return nil
}

// find is the position of the field named key, or -1.
func (ix *fieldIndex) find(key []byte) int {
	for i, n := range ix.names {
		if len(n) == len(key) && n == string(key) {
			return i
		}
	}
	return -1
}

var indexes sync.Map // protoreflect.FullName → *fieldIndex

// indexOf is md's field index: its fields by name, and its extra field.
func indexOf(md protoreflect.MessageDescriptor) *fieldIndex {
	if v, ok := indexes.Load(md.FullName()); ok {
		return v.(*fieldIndex)
	}
	ix := &fieldIndex{extra: extraField(md)}
	for i := 0; i < md.Fields().Len(); i++ {
		if fd := md.Fields().Get(i); fd != ix.extra && rawName(fd) == "" { // a raw field is no member
			ix.names, ix.fds = append(ix.names, string(fd.Name())), append(ix.fds, fd)
			ix.checks = append(ix.checks, checkOf(fd))
		}
	}
	indexes.Store(md.FullName(), ix)
	return ix
}

// index is indexOf(md), remembering the last one asked for: the objects of a
// list (a history's messages) share one.
func (s *scanner) index(md protoreflect.MessageDescriptor) *fieldIndex {
	if s.lastIx == nil || s.lastMD != md {
		s.lastMD, s.lastIx = md, indexOf(md)
	}
	return s.lastIx
}

func extraField(md protoreflect.MessageDescriptor) protoreflect.FieldDescriptor {
	fd := md.Fields().ByName(ExtraField)
	if fd == nil || fd.Message() == nil || fd.Message().FullName() != "google.protobuf.Struct" {
		return nil
	}
	return fd
}

func (d *decoder) message(m protoreflect.Message) error {
	md := m.Descriptor()
	switch md.FullName() {
	case "google.protobuf.Struct":
		if d.s.peek() != '{' {
			return d.fail("expected an object")
		}
		st, err := d.s.structValue()
		if err != nil {
			return d.valueError(err)
		}
		proto.Merge(m.Interface(), st)
		return nil
	case "google.protobuf.ListValue":
		if d.s.peek() != '[' {
			return d.fail("expected an array")
		}
		v, err := d.s.value()
		if err != nil {
			return d.valueError(err)
		}
		proto.Merge(m.Interface(), v.GetListValue())
		return nil
	case "google.protobuf.Value":
		v, err := d.s.value()
		if err != nil {
			return d.valueError(err)
		}
		proto.Merge(m.Interface(), v)
		return nil
	}
	if d.s.peek() != '{' {
		return d.fail("expected an object")
	}
	ix := d.s.index(md)
	extraFd := ix.extra
	rawFd, listFd := rawMessagesField(md)
	var extra *structpb.Struct
	err := d.s.object(func(key []byte) error {
		fd := ix.get(key)
		if fd == nil {
			if extraFd == nil {
				return d.s.skip()
			}
			v, err := d.s.value()
			if err != nil {
				d.push(string(key))
				return d.valueError(err)
			}
			if extra == nil {
				extra = &structpb.Struct{Fields: make(map[string]*structpb.Value, 4)}
			}
			extra.Fields[string(key)] = v
			return nil
		}
		if rawFd != nil && fd == listFd {
			if d.raw && d.rawMessages(m, rawFd, listFd) {
				return nil
			}
			m.Clear(rawFd) // the last "messages" counts
		}
		d.push(string(fd.Name()))
		err := d.field(m, fd)
		if err == nil {
			d.pop()
		}
		return err
	})
	if err != nil {
		return err
	}
	if extra != nil {
		m.Set(extraFd, protoreflect.ValueOfMessage(extra.ProtoReflect()))
	}
	return nil
}

func (d *decoder) null() bool {
	if d.s.peek() == 'n' {
		return d.s.literal("null")
	}
	return false
}

// field decodes one known member; what an earlier member of that name set is
// dropped first, so that the last one counts.
func (d *decoder) field(m protoreflect.Message, fd protoreflect.FieldDescriptor) error {
	m.Clear(fd)
	switch {
	case fd.IsMap():
		if d.null() {
			return nil
		}
		if d.s.peek() != '{' {
			return d.fail("expected an object")
		}
		mp := m.Mutable(fd).Map()
		return d.s.object(func(key []byte) error {
			k := string(key)
			d.push(k)
			val, err := d.scalar(fd.MapValue())
			if err != nil {
				return err
			}
			d.pop()
			mp.Set(protoreflect.ValueOfString(k).MapKey(), val)
			return nil
		})
	case fd.IsList():
		if d.null() {
			return nil
		}
		if d.s.peek() != '[' {
			return d.fail("expected an array")
		}
		list := m.Mutable(fd).List()
		return d.s.array(func(i int) error {
			d.pushIndex(i)
			if fd.Message() != nil {
				if d.s.peek() == 'n' {
					return d.fail("expected an object")
				}
				el := list.NewElement()
				if err := d.message(el.Message()); err != nil {
					return err
				}
				list.Append(el)
			} else {
				val, err := d.scalar(fd)
				if err != nil {
					return err
				}
				list.Append(val)
			}
			d.pop()
			return nil
		})
	case fd.Message() != nil:
		if d.s.peek() == 'n' && fd.Message().FullName() != "google.protobuf.Value" {
			return d.s.lit("null")
		}
		return d.message(m.Mutable(fd).Message())
	default:
		if d.null() {
			return nil
		}
		val, err := d.scalar(fd)
		if err != nil {
			return err
		}
		m.Set(fd, val)
		return nil
	}
}

func (d *decoder) scalar(fd protoreflect.FieldDescriptor) (protoreflect.Value, error) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		if d.s.peek() != '"' {
			return protoreflect.Value{}, d.fail("expected a string")
		}
		v, err := d.s.str()
		return protoreflect.ValueOfString(v), err
	case protoreflect.EnumKind:
		if d.s.peek() == '"' {
			s, err := d.s.str()
			if err != nil {
				return protoreflect.Value{}, err
			}
			if ev := fd.Enum().Values().ByName(protoreflect.Name(s)); ev != nil {
				return protoreflect.ValueOfEnum(ev.Number()), nil
			}
		}
		return protoreflect.Value{}, d.fail("unknown value")
	}
	v, msg, err := d.s.plain(fd)
	if msg != "" {
		return v, d.fail(msg)
	}
	return v, err
}

// plain reads a boolean or a number for fd, which is of neither string nor enum
// kind; msg says what is wrong with a well-formed value of the wrong type.
func (s *scanner) plain(fd protoreflect.FieldDescriptor) (v protoreflect.Value, msg string, err error) {
	c := s.peek()
	switch fd.Kind() {
	case protoreflect.BoolKind:
		switch {
		case s.literal("true"):
			return protoreflect.ValueOfBool(true), "", nil
		case s.literal("false"):
			return protoreflect.ValueOfBool(false), "", nil
		}
		return v, "expected a boolean", nil
	case protoreflect.DoubleKind, protoreflect.FloatKind:
		if c != '-' && (c < '0' || c > '9') {
			return v, "expected a number", nil
		}
		num, err := s.number()
		if err != nil {
			return v, "", err
		}
		f, err := strconv.ParseFloat(string(num), 64)
		if err != nil {
			return v, "expected a number", nil
		}
		if fd.Kind() == protoreflect.FloatKind {
			return protoreflect.ValueOfFloat32(float32(f)), "", nil
		}
		return protoreflect.ValueOfFloat64(f), "", nil
	case protoreflect.MessageKind, protoreflect.GroupKind, protoreflect.BytesKind,
		protoreflect.StringKind, protoreflect.EnumKind:
		return v, "unsupported field kind " + fd.Kind().String(), nil
	}
	if c != '-' && (c < '0' || c > '9') {
		return v, "expected an integer", nil
	}
	num, err := s.number()
	if err != nil {
		return v, "", err
	}
	v, msg = integer(num, fd.Kind())
	return v, msg, nil
}

// integer converts num for a field of integer kind k: an integral value, as a
// float up to 2^53 too ("n": 1.0), within k's range.
func integer(num []byte, k protoreflect.Kind) (protoreflect.Value, string) {
	n, ok := smallInt(num)
	if !ok {
		var err error
		n, err = strconv.ParseInt(string(num), 10, 64)
		ok = err == nil
	}
	if !ok {
		f, ferr := strconv.ParseFloat(string(num), 64)
		if ferr != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return protoreflect.Value{}, "expected an integer"
		}
		n = int64(f)
	}
	switch k {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		if n < math.MinInt32 || n > math.MaxInt32 {
			return protoreflect.Value{}, "integer out of range"
		}
		return protoreflect.ValueOfInt32(int32(n)), ""
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		if n < 0 || n > math.MaxUint32 {
			return protoreflect.Value{}, "integer out of range"
		}
		return protoreflect.ValueOfUint32(uint32(n)), ""
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		if n < 0 {
			return protoreflect.Value{}, "integer out of range"
		}
		return protoreflect.ValueOfUint64(uint64(n)), ""
	}
	return protoreflect.ValueOfInt64(n), ""
}

// smallInt reads a well-formed JSON number of at most 18 digits with no fraction
// or exponent, the common case, faster than strconv.
func smallInt(num []byte) (int64, bool) {
	digits := num
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if len(digits) < len(num) {
		n = -n
	}
	return n, true
}
