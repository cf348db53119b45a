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
// changed), so a request holding one is refused (InvalidArgument naming the
// member, as a REST body of the same meaning, which JSON cannot even carry, is
// a 400). check notes such bytes as it walks them, at no cost to a message
// without any; the message is then judged as decoded (a later value of a field
// replaces an earlier one, as protobuf-go reads it), by finite.

// notFinite reports whether a value of fd's in v (one value of wire type typ,
// or a packed list) is not a finite number.
func notFinite(fd protoreflect.FieldDescriptor, typ protowire.Type, v []byte) bool {
	var size int
	switch fd.Kind() {
	case protoreflect.DoubleKind:
		size = 8
	case protoreflect.FloatKind:
		size = 4
	default:
		return false
	}
	if typ != protowire.BytesType {
		v = v[:size] // a fixed32/fixed64 value, whole (ConsumeFieldValue checked)
	}
	for i := 0; i+size <= len(v); i += size {
		var f float64
		if size == 8 {
			f = math.Float64frombits(binary.LittleEndian.Uint64(v[i:]))
		} else {
			f = float64(math.Float32frombits(binary.LittleEndian.Uint32(v[i:])))
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return true
		}
	}
	return false
}

// finite returns the refusal of the first number m holds that is not finite,
// naming it as openaijson writes the message ("tools[0].function.parameters.x");
// nil when there is none.
func finite(m protoreflect.Message) error {
	if f, path, bad := firstNonFinite(m); bad {
		return &openaijson.Error{Param: strings.TrimPrefix(path, "."),
			Msg: strconv.FormatFloat(f, 'g', -1, 64) + " is not a number JSON can carry (NaN and Infinity cannot be sent)"}
	}
	return nil
}

// firstNonFinite finds it, with its path (each member ".name", each element "[i]").
func firstNonFinite(m protoreflect.Message) (f float64, path string, bad bool) {
	md := m.Descriptor()
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		name := memberName(md, fd)
		switch {
		case fd.IsList():
			l := v.List()
			for i := range l.Len() {
				if f, path, bad = valueNonFinite(fd, l.Get(i)); bad {
					path = name + "[" + strconv.Itoa(i) + "]" + path
					return false
				}
			}
		case fd.IsMap():
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				if f, path, bad = valueNonFinite(fd.MapValue(), mv); bad {
					path = name + "." + k.String() + path
				}
				return !bad
			})
		default:
			if f, path, bad = valueNonFinite(fd, v); bad {
				path = name + path
			}
		}
		return !bad
	})
	return f, path, bad
}

func valueNonFinite(fd protoreflect.FieldDescriptor, v protoreflect.Value) (float64, string, bool) {
	switch fd.Kind() {
	case protoreflect.DoubleKind, protoreflect.FloatKind:
		f := v.Float()
		return f, "", math.IsNaN(f) || math.IsInf(f, 0)
	case protoreflect.MessageKind:
		return firstNonFinite(v.Message())
	}
	return 0, "", false
}

// memberName is field fd of a message of type md as a member of the JSON path:
// ".name"; none for a Value's fields, a Struct's map (its keys are the members)
// and a message's extra Struct (its members are written into the message's
// object); a ListValue's values are its elements.
func memberName(md protoreflect.MessageDescriptor, fd protoreflect.FieldDescriptor) string {
	switch md.FullName() {
	case "google.protobuf.Value", "google.protobuf.Struct", "google.protobuf.ListValue":
		return ""
	}
	if fd.Name() == openaijson.ExtraField && fd.Message() != nil && fd.Message().FullName() == "google.protobuf.Struct" {
		return ""
	}
	return "." + string(fd.Name())
}
