package anthropicjson

import (
	"encoding/json"
	"fmt"
)

// CheckMessage reports whether body, a successful /v1/messages answer relayed
// to the client as it came, is a message: a JSON object of type "message" with
// a list of content blocks. Anything else (valid JSON that is no message: {},
// [], a number) wraps ErrMalformed, the upstream's fault. The blocks themselves
// are relayed unread: a client reads block types Switchyard does not know.
func CheckMessage(body []byte) error {
	var m struct {
		Type       string          `json:"type"`
		Content    json.RawMessage `json:"content"`
		StopReason *string         `json:"stop_reason"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if m.Type != "message" {
		return fmt.Errorf("%w: type %q, not a message", ErrMalformed, m.Type)
	}
	if len(m.Content) == 0 || m.Content[0] != '[' {
		return fmt.Errorf("%w: a message without a list of content", ErrMalformed)
	}
	var blocks []json.RawMessage
	if m.StopReason == nil && json.Unmarshal(m.Content, &blocks) == nil && len(blocks) == 0 {
		return ErrEmptyMessage
	}
	return nil
}

// CheckTokenCount reports whether body, a successful count_tokens answer, is
// one: an object with a whole input_tokens.
func CheckTokenCount(body []byte) error {
	var c struct {
		InputTokens *int64 `json:"input_tokens"`
	}
	if err := json.Unmarshal(body, &c); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if c.InputTokens == nil {
		return fmt.Errorf("%w: no input_tokens", ErrMalformed)
	}
	return nil
}
