package codec

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/switchyard/switchyard/openaijson"
)

// A double or float that is NaN or ±Infinity has no JSON form: written
// upstream it would be null (a temperature dropped, a tool's parameter
// changed), so a request carrying one is refused (InvalidArgument naming the
// member, as a REST body of the same meaning, which JSON cannot even carry, is
// a 400). check finds them as it walks the bytes; nonFiniteError builds the
// member's path on the error's way out, as openaijson names it.

// nonFinite reports the first value of fd's in v (one value of wire type typ,
// or a packed list) that is not a finite number, and its place in the list.
func nonFinite(fd protoreflect.FieldDescriptor, typ protowire.Type, v []byte) (float64, int, bool) {
	var size int
	switch fd.Kind() {
	case protoreflect.DoubleKind:
		size = 8
	case protoreflect.FloatKind:
		size = 4
	default:
		return 0, 0, false
	}
	if typ != protowire.BytesType {
		v = v[:size] // a fixed32/fixed64 value, checked by the caller to be whole
	}
	for i := 0; i+size <= len(v); i += size {
		var f float64
		if size == 8 {
			f = math.Float64frombits(binary.LittleEndian.Uint64(v[i:]))
		} else {
			f = float64(math.Float32frombits(binary.LittleEndian.Uint32(v[i:])))
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return f, i / size, true
		}
	}
	return 0, 0, false
}

// nonFiniteError is the refusal of a value f of field fd, at index i of a list.
func nonFiniteError(md protoreflect.MessageDescriptor, fd protoreflect.FieldDescriptor, f float64, i int) *openaijson.Error {
	e := &openaijson.Error{Msg: strconv.FormatFloat(f, 'g', -1, 64) + " is not a number JSON can carry (NaN and Infinity cannot be sent)"}
	addMember(e, md, fd, i, "")
	return e
}

// addMember puts field fd of a message of type md in front of e's path: the
// member's name, and its index in a list or its key in a map. A Value's fields
// and a message's extra Struct are no member of their own (the Value is its
// parent's member; extra's members are written into the message's object).
func addMember(e *openaijson.Error, md protoreflect.MessageDescriptor, fd protoreflect.FieldDescriptor, i int, key string) {
	var p string
	switch {
	case md.FullName() == "google.protobuf.Value", md.FullName() == "google.protobuf.Struct":
	case md.FullName() == "google.protobuf.ListValue":
		p = "[" + strconv.Itoa(i) + "]"
	case md.IsMapEntry():
		p = "." + key
	case fd.Name() == openaijson.ExtraField && fd.Message() != nil && fd.Message().FullName() == "google.protobuf.Struct":
	case fd.IsList():
		p = "." + string(fd.Name()) + "[" + strconv.Itoa(i) + "]"
	default:
		p = "." + string(fd.Name())
	}
	if p != "" && e.Param != "" && !strings.HasPrefix(e.Param, "[") {
		p += "."
	}
	e.Param = strings.TrimPrefix(p+e.Param, ".")
}

// occurrences counts field num's values in b before offset at: a repeated
// message field's index, read again only on the way out of an error.
func occurrences(b []byte, at int, num protowire.Number) int {
	n := 0
	for off := 0; off < at; {
		got, typ, l := protowire.ConsumeTag(b[off:])
		if l < 0 {
			break
		}
		off += l
		m := protowire.ConsumeFieldValue(got, typ, b[off:])
		if m < 0 {
			break
		}
		off += m
		if got == num {
			n++
		}
	}
	return n
}
