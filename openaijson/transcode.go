package openaijson

import "google.golang.org/protobuf/encoding/protowire"

// ChatMessage's and google.protobuf.Value's field numbers, as on the wire.
const (
	wireRole, wireContent, wireName, wireToolCalls, wireToolCallID, wireRefusal = 1, 2, 3, 4, 5, 6
	wireValueNull, wireValueString                                              = 1, 3
)

// wireMessage is one ChatMessage's fields as they lie in its encoding.
type wireMessage struct {
	seen                            uint8
	role, name, toolCallID, refusal []byte
	content                         []byte // the string, when contentNull is false
	hasContent, contentNull         bool
}

// TranscodeMessage appends to b the JSON of the ChatMessage whose protobuf
// encoding is m — exactly what Append writes for it once decoded — without
// decoding it, and reports whether it could. It takes the shape nearly every
// message of a long history has: role (not empty), content as a string or null,
// name, tool_call_id and refusal, each at most once, strings valid UTF-8.
// Anything else (tool calls, content parts, unknown fields, a repeated field)
// is false: the caller decodes as usual, which gives such messages their
// meaning and malformed ones their error.
func TranscodeMessage(b, m []byte) ([]byte, bool) {
	var w wireMessage
	for len(m) > 0 {
		num, typ, n := protowire.ConsumeTag(m)
		if n < 0 || typ != protowire.BytesType || num > wireRefusal || num == wireToolCalls || w.seen&(1<<num) != 0 {
			return b, false
		}
		w.seen |= 1 << num
		m = m[n:]
		v, n := protowire.ConsumeBytes(m)
		if n < 0 {
			return b, false
		}
		m = m[n:]
		switch num {
		case wireRole:
			w.role = v
		case wireName:
			w.name = v
		case wireToolCallID:
			w.toolCallID = v
		case wireRefusal:
			w.refusal = v
		case wireContent:
			var ok bool
			if w.content, w.contentNull, ok = wireValue(v); !ok {
				return b, false
			}
			w.hasContent = true
		}
	}
	if len(w.role) == 0 {
		return b, false
	}
	// Strings as the encoder writes them; invalid UTF-8 is false (protobuf-go
	// refuses such a string: let it say so).
	ok := true
	str := func(prefix string, v []byte) {
		if ok {
			b = append(b, prefix...)
			b, ok = appendStr(b, v, true)
		}
	}
	str(`{"role":`, w.role)
	if w.hasContent {
		if w.contentNull {
			b = append(b, `,"content":null`...)
		} else {
			str(`,"content":`, w.content)
		}
	}
	if w.seen&(1<<wireName) != 0 {
		str(`,"name":`, w.name)
	}
	if w.seen&(1<<wireToolCallID) != 0 {
		str(`,"tool_call_id":`, w.toolCallID)
	}
	if w.seen&(1<<wireRefusal) != 0 {
		str(`,"refusal":`, w.refusal)
	}
	if !ok {
		return b, false
	}
	return append(b, '}'), true
}

// wireValue reads a google.protobuf.Value that is a string or null. One with no
// kind set (Append writes null for it too) is left to the decoder, which keeps
// it as such.
func wireValue(v []byte) (str []byte, null, ok bool) {
	null = true
	seen := false
	for len(v) > 0 {
		num, typ, n := protowire.ConsumeTag(v)
		if n < 0 || seen {
			return nil, false, false
		}
		seen = true
		v = v[n:]
		switch {
		case num == wireValueString && typ == protowire.BytesType:
			s, n := protowire.ConsumeBytes(v)
			if n < 0 {
				return nil, false, false
			}
			str, null, v = s, false, v[n:]
		case num == wireValueNull && typ == protowire.VarintType:
			x, n := protowire.ConsumeVarint(v)
			if n < 0 || x != 0 {
				return nil, false, false
			}
			v = v[n:]
		default:
			return nil, false, false
		}
	}
	return str, null, seen
}
