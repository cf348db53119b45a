package openaijson_test

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/switchyard/switchyard/openaijson"
)

// encoding/json is the oracle of the decoder fuzz tests. Where the two may differ,
// by design:
//   - nesting past openaijson.MaxDepth is refused (ErrTooDeep), valid or not;
//   - a message's schema refuses valid JSON of the wrong shape, with an error that
//     names the member (or ErrNotObject when the input is no object);
//   - a number past float64's range is refused where a value is kept (extra
//     members, Value and Struct fields), as encoding/json refuses it for an any,
//     but skipped unchecked in a message without an extra field;
//   - a known field set to null is unset, as if absent (encoding/json's map keeps
//     the nil), and a Value field set to null holds a null Value.
// Everything else must match: what is valid JSON, and every string, number, bool
// and unknown member, with a member given twice counting the last time.

// oracle is encoding/json's decoding of data into an any.
func oracle(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("encoding/json refuses what openaijson accepted, %q: %v", data, err)
	}
	return v
}

// depth is the nesting of valid JSON: {"a":[1]} is 2.
func depth(data []byte) int {
	max, d, inString := 0, 0, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '[' || c == '{':
			d++
			max = maxInt(max, d)
		case c == ']' || c == '}':
			d--
		}
	}
	return max
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// checkVerdict holds err, what a decoder said of data, to encoding/json's verdict.
func checkVerdict(t *testing.T, data []byte, err error) {
	t.Helper()
	valid := json.Valid(data)
	switch {
	case !valid:
		if !errors.Is(err, openaijson.ErrSyntax) && !errors.Is(err, openaijson.ErrTooDeep) {
			t.Fatalf("invalid JSON %q: error %v, want ErrSyntax (or ErrTooDeep)", data, err)
		}
	case depth(data) > openaijson.MaxDepth:
		if !errors.Is(err, openaijson.ErrTooDeep) {
			t.Fatalf("JSON %d levels deep: error %v, want ErrTooDeep", depth(data), err)
		}
	case err != nil:
		var de *openaijson.Error
		if !errors.As(err, &de) || errors.Is(err, openaijson.ErrSyntax) || errors.Is(err, openaijson.ErrTooDeep) {
			t.Fatalf("valid JSON %q: error %v, want a member's error or ErrNotObject", data, err)
		}
		if de.Err != nil && !errors.Is(err, openaijson.ErrNotObject) {
			t.Fatalf("valid JSON %q: error %v is no member's", data, err)
		}
	}
}

// checkMessage holds m, decoded from data without error, to encoding/json's
// decoding of data.
func checkMessage(t *testing.T, data []byte, m protoreflect.Message) {
	t.Helper()
	want, ok := oracle(t, data).(map[string]any)
	if !ok {
		t.Fatalf("decoded a message from a non-object %q", data)
	}
	if msg := compareMessage(m, want); msg != "" {
		t.Fatalf("%s\ninput %q", msg, data)
	}
}

// compareMessage says how m differs from want ("" when it does not).
func compareMessage(m protoreflect.Message, want map[string]any) string {
	md := m.Descriptor()
	switch md.FullName() {
	case "google.protobuf.Struct":
		return sameAny(m.Interface().(*structpb.Struct).AsMap(), want, string(md.FullName()))
	}
	fields := md.Fields()
	var extra map[string]any
	if fd := fields.ByName(openaijson.ExtraField); fd != nil && m.Has(fd) {
		extra = m.Get(fd).Message().Interface().(*structpb.Struct).AsMap()
	}
	for k, v := range want {
		fd := fields.ByName(protoreflect.Name(k))
		if fd == nil || k == openaijson.ExtraField {
			got, ok := extra[k]
			if !ok {
				return "unknown member " + k + " was dropped"
			}
			if msg := sameAny(got, v, k); msg != "" {
				return msg
			}
			continue
		}
		if msg := compareField(m, fd, v); msg != "" {
			return msg
		}
	}
	for k := range extra {
		if _, ok := want[k]; !ok {
			return "extra holds " + k + ", which the input has not"
		}
	}
	var msg string
	m.Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		if _, ok := want[string(fd.Name())]; !ok && fd.Name() != openaijson.ExtraField {
			msg = "field " + string(fd.Name()) + " is set but not in the input"
		}
		return msg == ""
	})
	return msg
}

func compareField(m protoreflect.Message, fd protoreflect.FieldDescriptor, want any) string {
	name := string(fd.Name())
	isValue := fd.Message() != nil && fd.Message().FullName() == "google.protobuf.Value" && !fd.IsList() && !fd.IsMap()
	if want == nil && !isValue {
		if m.Has(fd) {
			return name + " is set, but null in the input"
		}
		return ""
	}
	v := m.Get(fd)
	switch {
	case isValue:
		return sameAny(v.Message().Interface().(*structpb.Value).AsInterface(), want, name)
	case fd.IsList():
		w, ok := want.([]any)
		if !ok || v.List().Len() != len(w) {
			return name + ": list differs"
		}
		for i, e := range w {
			if msg := compareSingle(v.List().Get(i), fd, e, name); msg != "" {
				return msg
			}
		}
		return ""
	case fd.IsMap():
		w, ok := want.(map[string]any)
		if !ok || v.Map().Len() != len(w) {
			return name + ": map differs"
		}
		for k, e := range w {
			mv := v.Map().Get(protoreflect.ValueOfString(k).MapKey())
			if !mv.IsValid() {
				return name + ": map lacks " + k
			}
			if msg := compareSingle(mv, fd.MapValue(), e, name); msg != "" {
				return msg
			}
		}
		return ""
	}
	return compareSingle(v, fd, want, name)
}

func compareSingle(v protoreflect.Value, fd protoreflect.FieldDescriptor, want any, name string) string {
	switch fd.Kind() {
	case protoreflect.MessageKind:
		if fd.Message().FullName() == "google.protobuf.Value" {
			return sameAny(v.Message().Interface().(*structpb.Value).AsInterface(), want, name)
		}
		if fd.Message().FullName() == "google.protobuf.ListValue" {
			return sameAny(v.Message().Interface().(*structpb.ListValue).AsSlice(), want, name)
		}
		w, ok := want.(map[string]any)
		if !ok {
			return name + ": not an object"
		}
		return compareMessage(v.Message(), w)
	case protoreflect.StringKind:
		return sameAny(v.String(), want, name)
	case protoreflect.BoolKind:
		return sameAny(v.Bool(), want, name)
	case protoreflect.DoubleKind:
		return sameAny(v.Float(), want, name)
	case protoreflect.FloatKind:
		if w, ok := want.(float64); !ok || float32(w) != float32(v.Float()) {
			return name + ": float differs"
		}
		return ""
	case protoreflect.EnumKind:
		return sameAny(string(fd.Enum().Values().ByNumber(v.Enum()).Name()), want, name)
	case protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.Fixed32Kind, protoreflect.Fixed64Kind:
		return sameAny(float64(v.Uint()), want, name)
	}
	return sameAny(float64(v.Int()), want, name) // float64 rounds as encoding/json's parse does
}

func sameAny(got, want any, name string) string {
	if f, ok := got.(float64); ok && math.IsNaN(f) {
		return name + ": NaN"
	}
	if !reflect.DeepEqual(got, want) {
		return name + ": decoded differently from encoding/json"
	}
	return ""
}
