package openaijson

import (
	"errors"
	"fmt"
)

// The kinds of whole-input failure, which an *Error wraps (errors.Is finds them).
// The messages say nothing of whose bytes they were: a caller says that ("request
// body: …", "provider x returned an unreadable response: …").
var (
	// ErrSyntax: the input is not JSON (nor is an empty input).
	ErrSyntax = errors.New("invalid JSON")
	// ErrTooDeep: arrays and objects nest deeper than MaxDepth.
	ErrTooDeep = fmt.Errorf("JSON nested deeper than %d levels", MaxDepth)
	// ErrTooManyValues: more JSON values in members kept as google.protobuf.Value
	// (content, unknown members, tool schemas) than the values budget allows.
	ErrTooManyValues = fmt.Errorf("more JSON values than %d plus one per %d bytes of input", ValuesFloor, BytesPerValue)
	// ErrNotObject: valid JSON, but not the object a message needs.
	ErrNotObject = errors.New("expected a JSON object")
)

// Error is a decoding error. Either it names the offending member, as OpenAI's
// "param" (a value of the wrong type, an integer out of range), or Err says what
// is wrong with the input as a whole (ErrSyntax, ErrTooDeep, ErrNotObject), Offset
// where, and Param is empty.
type Error struct {
	// Param is the member's path, e.g. "messages[0].role" (empty for the whole
	// input, and for a member named "").
	Param string
	// Msg says what is wrong.
	Msg string
	// Err is ErrSyntax, ErrTooDeep, ErrTooManyValues or ErrNotObject for the whole
	// input; nil for a member's error.
	Err error
	// Offset is the byte offset of a syntax or depth error.
	Offset int
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Msg
	}
	return fmt.Sprintf("invalid value for '%s': %s", e.Param, e.Msg)
}

// Unwrap returns the whole-input kind (nil for a member's error).
func (e *Error) Unwrap() error { return e.Err }

// failure is the error for data that did not decode (err is what the decoder
// hit, nil when data does not start with an object): the syntax or depth error
// of data if it has one, wherever it sits, before anything else, as a member's
// type matters only in valid JSON.
func failure(data []byte, err error) error {
	s := scanner{data: data}
	if s.atEnd() {
		return &Error{Msg: "empty input; expected a JSON object", Err: ErrSyntax, Offset: s.pos}
	}
	first := s.peek()
	serr := s.skip()
	if serr == nil && !s.atEnd() {
		serr = errSyntax
	}
	switch {
	case serr == errTooDeep:
		return &Error{Msg: fmt.Sprintf("%v (at byte %d)", ErrTooDeep, s.pos), Err: ErrTooDeep, Offset: s.pos}
	case serr != nil:
		return syntaxError(data, s.pos)
	case first != '{':
		return &Error{Msg: ErrNotObject.Error(), Err: ErrNotObject}
	}
	var de *Error
	if errors.As(err, &de) {
		return de
	}
	// The decoder and the syntax check disagree: a bug, reported as a syntax error.
	return syntaxError(data, 0)
}

func syntaxError(data []byte, pos int) error {
	msg := "invalid JSON: unexpected end of input"
	if pos < len(data) {
		msg = fmt.Sprintf("invalid JSON: unexpected %q at byte %d", data[pos:pos+1], pos)
	}
	return &Error{Msg: msg, Err: ErrSyntax, Offset: pos}
}
