package anthropicjson

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The JSON names of each type's modelled members (TestKnownNamesMatchTags holds
// them to the struct tags): the members its Extra never keeps.
var (
	requestNames    = []string{"model", "messages", "system", "max_tokens", "temperature", "top_p", "top_k", "stop_sequences", "stream", "tools", "tool_choice", "thinking", "metadata"}
	messageNames    = []string{"role", "content"}
	blockNames      = []string{"type", "text", "citations", "source", "id", "name", "input", "tool_use_id", "content", "is_error", "thinking", "signature", "data", "cache_control"}
	toolNames       = []string{"type", "name", "description", "input_schema", "cache_control"}
	responseNames   = []string{"id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage"}
	usageNames      = []string{"input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"}
	deltaUsageNames = usageNames
)

// MarshalJSON writes the request with its Extra members.
func (r Request) MarshalJSON() ([]byte, error) {
	type plain Request
	return marshalExtra(plain(r), r.Extra)
}

// UnmarshalJSON reads the request, keeping unknown members in Extra.
func (r *Request) UnmarshalJSON(data []byte) error {
	type plain Request
	return unmarshalExtra(data, (*plain)(r), &r.Extra, requestNames)
}

// MarshalJSON writes the message with its Extra members.
func (m Message) MarshalJSON() ([]byte, error) {
	type plain Message
	return marshalExtra(plain(m), m.Extra)
}

// UnmarshalJSON reads the message, keeping unknown members in Extra.
func (m *Message) UnmarshalJSON(data []byte) error {
	type plain Message
	return unmarshalExtra(data, (*plain)(m), &m.Extra, messageNames)
}

// MarshalJSON writes the tool with its Extra members.
func (t Tool) MarshalJSON() ([]byte, error) {
	type plain Tool
	return marshalExtra(plain(t), t.Extra)
}

// UnmarshalJSON reads the tool, keeping unknown members in Extra.
func (t *Tool) UnmarshalJSON(data []byte) error {
	type plain Tool
	return unmarshalExtra(data, (*plain)(t), &t.Extra, toolNames)
}

// MarshalJSON writes the message object with its Extra members.
func (r Response) MarshalJSON() ([]byte, error) {
	type plain Response
	if r.Content == nil {
		r.Content = []ContentBlock{}
	}
	return marshalExtra(plain(r), r.Extra)
}

// UnmarshalJSON reads the message object, keeping unknown members in Extra.
func (r *Response) UnmarshalJSON(data []byte) error {
	type plain Response
	return unmarshalExtra(data, (*plain)(r), &r.Extra, responseNames)
}

// MarshalJSON writes the usage with its Extra members.
func (u Usage) MarshalJSON() ([]byte, error) {
	type plain Usage
	return marshalExtra(plain(u), u.Extra)
}

// UnmarshalJSON reads the usage, keeping unknown members in Extra.
func (u *Usage) UnmarshalJSON(data []byte) error {
	type plain Usage
	return unmarshalExtra(data, (*plain)(u), &u.Extra, usageNames)
}

// MarshalJSON writes the usage with its Extra members.
func (u DeltaUsage) MarshalJSON() ([]byte, error) {
	type plain DeltaUsage
	return marshalExtra(plain(u), u.Extra)
}

// UnmarshalJSON reads the usage, keeping unknown members in Extra.
func (u *DeltaUsage) UnmarshalJSON(data []byte) error {
	type plain DeltaUsage
	return unmarshalExtra(data, (*plain)(u), &u.Extra, deltaUsageNames)
}

// UnmarshalJSON reads the block, keeping unknown members in Extra. A "content"
// that is neither a string nor an array of blocks (as in server tool result
// blocks) is kept in Extra too, except on a tool_result, where it is an error.
func (b *ContentBlock) UnmarshalJSON(data []byte) error {
	type plain ContentBlock
	var aux struct {
		*plain
		Content json.RawMessage `json:"content"`
	}
	aux.plain = (*plain)(b)
	*b = ContentBlock{}
	if err := json.Unmarshal(data, &aux); err != nil {
		return err
	}
	extra, err := splitExtra(data, blockNames)
	if err != nil {
		return err
	}
	b.Extra = extra
	if len(aux.Content) == 0 {
		return nil
	}
	var c Content
	if err := json.Unmarshal(aux.Content, &c); err != nil {
		if b.Type == BlockToolResult {
			return err
		}
		if b.Extra == nil {
			b.Extra = Extra{}
		}
		b.Extra["content"] = aux.Content
		return nil
	}
	if !bytes.Equal(bytes.TrimSpace(aux.Content), []byte("null")) {
		b.Content = &c
	}
	return nil
}

// MarshalJSON writes the members the block's type has (see ContentBlock),
// those it must always have included, then CacheControl and Extra. A block of
// a type not listed there is written with every non-empty member.
func (b ContentBlock) MarshalJSON() ([]byte, error) {
	w := objWriter{buf: []byte{'{'}}
	w.member("type", b.Type)
	switch b.Type {
	case BlockText:
		w.member("text", b.Text)
		w.raw("citations", b.Citations)
	case BlockImage, BlockDocument:
		w.optional("source", b.Source != nil, b.Source)
	case BlockToolUse, "server_tool_use":
		w.member("id", b.ID)
		w.member("name", b.Name)
		input := b.Input
		if len(input) == 0 {
			input = json.RawMessage("{}")
		}
		w.raw("input", input)
	case BlockToolResult:
		w.member("tool_use_id", b.ToolUseID)
		w.optional("content", b.Content != nil, b.Content)
		w.optional("is_error", b.IsError != nil, b.IsError)
	case BlockThinking:
		w.member("thinking", b.Thinking)
		w.member("signature", b.Signature)
	case BlockRedactedThinking:
		w.member("data", b.Data)
	default:
		w.optional("text", b.Text != "", b.Text)
		w.raw("citations", b.Citations)
		w.optional("source", b.Source != nil, b.Source)
		w.optional("id", b.ID != "", b.ID)
		w.optional("name", b.Name != "", b.Name)
		w.raw("input", b.Input)
		w.optional("tool_use_id", b.ToolUseID != "", b.ToolUseID)
		w.optional("content", b.Content != nil, b.Content)
		w.optional("is_error", b.IsError != nil, b.IsError)
		w.optional("thinking", b.Thinking != "", b.Thinking)
		w.optional("signature", b.Signature != "", b.Signature)
		w.optional("data", b.Data != "", b.Data)
	}
	w.raw("cache_control", b.CacheControl)
	if w.err != nil {
		return nil, w.err
	}
	return appendExtra(append(w.buf, '}'), b.Extra), nil
}

// MarshalJSON writes the member the delta's type has, always (an unknown type:
// every non-empty member).
func (d Delta) MarshalJSON() ([]byte, error) {
	w := objWriter{buf: []byte{'{'}}
	w.member("type", d.Type)
	switch d.Type {
	case DeltaText:
		w.member("text", d.Text)
	case DeltaInputJSON:
		w.member("partial_json", d.PartialJSON)
	case DeltaThinking:
		w.member("thinking", d.Thinking)
	case DeltaSignature:
		w.member("signature", d.Signature)
	case DeltaCitations:
		w.raw("citation", d.Citation)
	default:
		w.optional("text", d.Text != "", d.Text)
		w.optional("partial_json", d.PartialJSON != "", d.PartialJSON)
		w.optional("thinking", d.Thinking != "", d.Thinking)
		w.optional("signature", d.Signature != "", d.Signature)
		w.raw("citation", d.Citation)
	}
	if w.err != nil {
		return nil, w.err
	}
	return append(w.buf, '}'), nil
}

func marshalExtra(v any, extra Extra) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return appendExtra(b, extra), nil
}

func unmarshalExtra(data []byte, v any, extra *Extra, known []string) error {
	if err := json.Unmarshal(data, v); err != nil {
		return err
	}
	e, err := splitExtra(data, known)
	if err != nil {
		return err
	}
	*extra = e
	return nil
}

// objWriter writes an object's members in order; the first error sticks.
type objWriter struct {
	buf []byte
	err error
}

func (w *objWriter) member(name string, v any) {
	if w.err != nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		w.err = err
		return
	}
	w.raw(name, b)
}

func (w *objWriter) optional(name string, present bool, v any) {
	if present {
		w.member(name, v)
	}
}

// raw writes v as it is; an empty v is no member.
func (w *objWriter) raw(name string, v []byte) {
	if w.err != nil || len(v) == 0 {
		return
	}
	if !json.Valid(v) {
		w.err = fmt.Errorf("anthropicjson: member %q is not valid JSON", name)
		return
	}
	if len(w.buf) > 1 {
		w.buf = append(w.buf, ',')
	}
	key, _ := json.Marshal(name)
	w.buf = append(w.buf, key...)
	w.buf = append(w.buf, ':')
	w.buf = append(w.buf, v...)
}
