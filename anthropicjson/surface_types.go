package anthropicjson

import (
	"encoding/json"
	"strconv"
)

// What the /v1/messages surface (server/messages*.go) needs besides the wire
// types: the request's head, its errors and Anthropic's error body.

// Head is what the surface reads of a request before routing it.
type Head struct {
	// Model is the model asked for.
	Model string
	// Stream is the request's "stream".
	Stream bool
	// MaxTokens is the request's "max_tokens" (0 for count_tokens, which has none).
	MaxTokens int
}

// SurfaceError is a request the surface cannot serve: malformed (Unsupported
// false, a 400 invalid_request_error as Anthropic gives it), or well formed but
// not translatable to the target's wire (Unsupported true: the surface names
// the target). Param is the member's path, e.g. "messages[1].content[0].type".
type SurfaceError struct {
	Param       string
	Message     string
	Unsupported bool
}

func (e *SurfaceError) Error() string {
	if e.Param == "" {
		return e.Message
	}
	return e.Param + ": " + e.Message
}

func badField(param, msg string) error { return &SurfaceError{Param: param, Message: msg} }

func untranslatable(param, msg string) error {
	return &SurfaceError{Param: param, Message: msg, Unsupported: true}
}

// index is "name[i]".
func pathAt(name string, i int) string { return name + "[" + strconv.Itoa(i) + "]" }

// errorWithID is ErrorBody with Anthropic's top-level request_id.
type errorWithID struct {
	ErrorBody
	RequestID string `json:"request_id,omitempty"`
}

// ErrorJSON is Anthropic's error body {"type":"error","error":{"type","message"},
// "request_id"} (request_id left out when empty): the body of a failed request,
// and the data of an in-band "error" event.
func ErrorJSON(errType, message, requestID string) []byte {
	b, _ := json.Marshal(errorWithID{ErrorBody: ErrorBody{Type: "error", Error: ErrorDetail{Type: errType, Message: message}},
		RequestID: requestID})
	return b
}
