package anthropicjson

import (
	"encoding/json"
	"errors"
	"fmt"
)

// ErrUnsupported is what an *UnsupportedError matches with errors.Is.
var ErrUnsupported = errors.New("cannot be translated to Anthropic's Messages API")

// UnsupportedError says that a chat request member has no meaning in
// Anthropic's Messages API (or a value of it cannot be expressed there). It is
// a client error (400): the request is refused rather than sent without it.
type UnsupportedError struct {
	// Param is the member's path in OpenAI's terms, as OpenAI's "param" names it:
	// "logit_bias", "messages[2].tool_calls[0].function.arguments".
	Param string
	// Reason says why, for the error message ("" for the plain statement).
	Reason string
}

func (e *UnsupportedError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("%s %s", e.Param, ErrUnsupported)
	}
	return fmt.Sprintf("%s %s: %s", e.Param, ErrUnsupported, e.Reason)
}

// Is matches ErrUnsupported.
func (e *UnsupportedError) Is(target error) bool { return target == ErrUnsupported }

func unsupported(param, reason string, args ...any) *UnsupportedError {
	return &UnsupportedError{Param: param, Reason: fmt.Sprintf(reason, args...)}
}

// ErrAPI is what an *APIError matches with errors.Is.
var ErrAPI = errors.New("anthropic error")

// APIError is an error Anthropic reported: an error body instead of a message
// (ToCompletion) or an "error" event inside a stream (ChunkTranslator).
type APIError struct {
	// Type is Anthropic's error type, e.g. "overloaded_error" (see StatusForType).
	Type    string
	Message string
}

func (e *APIError) Error() string { return fmt.Sprintf("anthropic %s: %s", e.Type, e.Message) }

// Is matches ErrAPI.
func (e *APIError) Is(target error) bool { return target == ErrAPI }

// ErrMalformed is what a stream event or body that is not what Anthropic
// sends wraps: not JSON, not the shape its type has, or out of order.
var ErrMalformed = errors.New("malformed Anthropic message")

// ErrEmptyMessage is a message with no content and no stop_reason: nothing was
// answered.
var ErrEmptyMessage = errors.New("the provider returned a message with no content and no stop_reason")

// ParseError reads Anthropic's error body {"type":"error","error":{"type",
// "message"}}; ok is false for anything else.
func ParseError(body []byte) (typ, message string, ok bool) {
	var e ErrorBody
	if json.Unmarshal(body, &e) != nil || e.Type != EventError || e.Error.Type == "" {
		return "", "", false
	}
	return e.Error.Type, e.Error.Message, true
}

// Anthropic's error types (https://docs.anthropic.com/en/api/errors).
const (
	ErrorInvalidRequest  = "invalid_request_error"
	ErrorAuthentication  = "authentication_error"
	ErrorBilling         = "billing_error"
	ErrorPermission      = "permission_error"
	ErrorNotFound        = "not_found_error"
	ErrorRequestTooLarge = "request_too_large"
	ErrorRateLimit       = "rate_limit_error"
	ErrorAPI             = "api_error"
	ErrorTimeout         = "timeout_error"
	ErrorOverloaded      = "overloaded_error"
)

var typeStatus = map[string]int{
	ErrorInvalidRequest:  400,
	ErrorAuthentication:  401,
	ErrorBilling:         402,
	ErrorPermission:      403,
	ErrorNotFound:        404,
	ErrorRequestTooLarge: 413,
	ErrorRateLimit:       429,
	ErrorAPI:             500,
	ErrorTimeout:         504,
	ErrorOverloaded:      529,
}

// StatusForType is the HTTP status Anthropic answers an error type with
// (500 for a type it does not document), for errors that arrive without one
// (in-band stream errors).
func StatusForType(typ string) int {
	if s, ok := typeStatus[typ]; ok {
		return s
	}
	return 500
}

// TypeForStatus is the error type Anthropic gives an HTTP status: the
// documented pairs, then invalid_request_error for other 4xx and api_error
// for the rest.
func TypeForStatus(status int) string {
	for typ, s := range typeStatus {
		if s == status {
			return typ
		}
	}
	if status >= 400 && status < 500 {
		return ErrorInvalidRequest
	}
	return ErrorAPI
}
