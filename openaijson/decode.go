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
package openaijson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
)

// ExtraField is the name of the Struct field that collects unknown members.
const ExtraField = "extra"

// Error is a decoding error that names the offending member, as OpenAI's "param".
type Error struct {
	// Param is the member's path, e.g. "messages[0].role"; empty for the whole body.
	Param string
	// Msg says what is wrong.
	Msg string
}

func (e *Error) Error() string {
	if e.Param == "" {
		return e.Msg
	}
	return fmt.Sprintf("invalid value for '%s': %s", e.Param, e.Msg)
}

// Unmarshal decodes the JSON object data into msg, replacing its contents.
func Unmarshal(data []byte, msg proto.Message) error {
	proto.Reset(msg)
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return &Error{Msg: "request body is empty; expected a JSON object"}
	}
	if !json.Valid(data) {
		return &Error{Msg: "request body is not valid JSON"}
	}
	if data[0] != '{' {
		return &Error{Msg: "request body must be a JSON object"}
	}
	return decodeMessage(data, msg.ProtoReflect(), "")
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func isWellKnown(md protoreflect.MessageDescriptor) bool {
	switch md.FullName() {
	case "google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue":
		return true
	}
	return false
}

func extraField(md protoreflect.MessageDescriptor) protoreflect.FieldDescriptor {
	fd := md.Fields().ByName(ExtraField)
	if fd == nil || fd.Message() == nil || fd.Message().FullName() != "google.protobuf.Struct" {
		return nil
	}
	return fd
}

func decodeMessage(raw []byte, m protoreflect.Message, path string) error {
	if isWellKnown(m.Descriptor()) {
		if err := protojson.Unmarshal(raw, m.Interface()); err != nil {
			return &Error{Param: path, Msg: "expected " + wellKnownWant(m.Descriptor())}
		}
		return nil
	}
	if raw[0] != '{' {
		return &Error{Param: path, Msg: "expected an object"}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return &Error{Param: path, Msg: "expected an object"}
	}
	md := m.Descriptor()
	extraFd := extraField(md)
	var extra *structpb.Struct
	for name, v := range obj {
		fd := md.Fields().ByName(protoreflect.Name(name))
		if fd == nil || fd == extraFd {
			if extraFd == nil {
				continue
			}
			var val structpb.Value
			if err := protojson.Unmarshal(v, &val); err != nil {
				return &Error{Param: join(path, name), Msg: "unreadable value"}
			}
			if extra == nil {
				extra = &structpb.Struct{Fields: make(map[string]*structpb.Value, len(obj))}
			}
			extra.Fields[name] = &val
			continue
		}
		if err := decodeField(v, m, fd, join(path, name)); err != nil {
			return err
		}
	}
	if extra != nil {
		m.Set(extraFd, protoreflect.ValueOfMessage(extra.ProtoReflect()))
	}
	return nil
}

func wellKnownWant(md protoreflect.MessageDescriptor) string {
	switch md.FullName() {
	case "google.protobuf.Struct":
		return "an object"
	case "google.protobuf.ListValue":
		return "an array"
	}
	return "a JSON value"
}

func decodeField(raw []byte, m protoreflect.Message, fd protoreflect.FieldDescriptor, path string) error {
	isNull := string(raw) == "null"
	switch {
	case fd.IsMap():
		if isNull {
			return nil
		}
		var obj map[string]json.RawMessage
		if raw[0] != '{' || json.Unmarshal(raw, &obj) != nil {
			return &Error{Param: path, Msg: "expected an object"}
		}
		mp := m.Mutable(fd).Map()
		for k, v := range obj {
			key, err := scalar([]byte(strconv.Quote(k)), fd.MapKey(), join(path, k))
			if err != nil {
				return err
			}
			val, err := scalar(v, fd.MapValue(), join(path, k))
			if err != nil {
				return err
			}
			mp.Set(key.MapKey(), val)
		}
		return nil
	case fd.IsList():
		if isNull {
			return nil
		}
		var arr []json.RawMessage
		if raw[0] != '[' || json.Unmarshal(raw, &arr) != nil {
			return &Error{Param: path, Msg: "expected an array"}
		}
		list := m.Mutable(fd).List()
		for i, v := range arr {
			p := path + "[" + strconv.Itoa(i) + "]"
			if fd.Message() != nil {
				el := list.NewElement()
				if string(v) == "null" {
					return &Error{Param: p, Msg: "expected an object"}
				}
				if err := decodeMessage(v, el.Message(), p); err != nil {
					return err
				}
				list.Append(el)
				continue
			}
			val, err := scalar(v, fd, p)
			if err != nil {
				return err
			}
			list.Append(val)
		}
		return nil
	case fd.Message() != nil:
		if isNull {
			if fd.Message().FullName() == "google.protobuf.Value" {
				m.Set(fd, protoreflect.ValueOfMessage(structpb.NewNullValue().ProtoReflect()))
			}
			return nil
		}
		return decodeMessage(raw, m.Mutable(fd).Message(), path)
	default:
		if isNull {
			return nil
		}
		val, err := scalar(raw, fd, path)
		if err != nil {
			return err
		}
		m.Set(fd, val)
		return nil
	}
}

func scalar(raw []byte, fd protoreflect.FieldDescriptor, path string) (protoreflect.Value, error) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		var s string
		if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
			return protoreflect.Value{}, &Error{Param: path, Msg: "expected a string"}
		}
		return protoreflect.ValueOfString(s), nil
	case protoreflect.BoolKind:
		switch string(raw) {
		case "true":
			return protoreflect.ValueOfBool(true), nil
		case "false":
			return protoreflect.ValueOfBool(false), nil
		}
		return protoreflect.Value{}, &Error{Param: path, Msg: "expected a boolean"}
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return integer(raw, fd, path)
	case protoreflect.DoubleKind, protoreflect.FloatKind:
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil || raw[0] == '"' {
			return protoreflect.Value{}, &Error{Param: path, Msg: "expected a number"}
		}
		if fd.Kind() == protoreflect.FloatKind {
			return protoreflect.ValueOfFloat32(float32(f)), nil
		}
		return protoreflect.ValueOfFloat64(f), nil
	case protoreflect.EnumKind:
		var s string
		if json.Unmarshal(raw, &s) == nil {
			if ev := fd.Enum().Values().ByName(protoreflect.Name(s)); ev != nil {
				return protoreflect.ValueOfEnum(ev.Number()), nil
			}
		}
		return protoreflect.Value{}, &Error{Param: path, Msg: "unknown value"}
	}
	return protoreflect.Value{}, &Error{Param: path, Msg: "unsupported field kind " + fd.Kind().String()}
}

func integer(raw []byte, fd protoreflect.FieldDescriptor, path string) (protoreflect.Value, error) {
	bad := &Error{Param: path, Msg: "expected an integer"}
	if raw[0] == '"' {
		return protoreflect.Value{}, bad
	}
	s := string(raw)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return protoreflect.Value{}, bad
		}
		n = int64(f)
	}
	switch fd.Kind() {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		if n < math.MinInt32 || n > math.MaxInt32 {
			return protoreflect.Value{}, &Error{Param: path, Msg: "integer out of range"}
		}
		return protoreflect.ValueOfInt32(int32(n)), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		if n < 0 || n > math.MaxUint32 {
			return protoreflect.Value{}, &Error{Param: path, Msg: "integer out of range"}
		}
		return protoreflect.ValueOfUint32(uint32(n)), nil
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		if n < 0 {
			return protoreflect.Value{}, &Error{Param: path, Msg: "integer out of range"}
		}
		return protoreflect.ValueOfUint64(uint64(n)), nil
	}
	return protoreflect.ValueOfInt64(n), nil
}
