package server

import (
	"errors"
	"net/http"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/switchyard/switchyard/anthropicjson"
	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/router"
)

// translation is a /v1/messages request translated to chat, made once, on the
// first attempt on a target that does not speak Anthropic's wire, and shared by
// every such attempt (a hedge may make two at once).
type translation struct {
	body []byte
	once sync.Once
	req  *pb.ChatCompletionRequest
	err  error
}

// request is the chat request for target t, or the 400 saying what of the
// request t cannot be sent.
func (tr *translation) request(t router.Target) (*pb.ChatCompletionRequest, error) {
	tr.once.Do(func() { tr.req, tr.err = anthropicjson.ToChat(tr.body) })
	if tr.err == nil {
		return tr.req, nil
	}
	e := &providers.Error{Provider: t.Provider.Name(), Status: http.StatusBadRequest, Type: anthropicjson.ErrorInvalidRequest,
		Message: tr.err.Error(), Err: tr.err}
	var se *anthropicjson.SurfaceError
	if errors.As(tr.err, &se) {
		e.Param = se.Param
		if se.Unsupported {
			e.Code = "unsupported_parameter"
			e.Message = se.Error() + " (provider " + t.Provider.Name() + " does not speak Anthropic's Messages API, so the request is translated to chat completions)"
		}
	}
	return nil, e
}

// surfaceError is the status of a request the surface refused before routing it.
func surfaceError(err error) error {
	var se *anthropicjson.SurfaceError
	if errors.As(err, &se) {
		return invalidRequest(se.Param, se.Error())
	}
	return invalidRequest("", err.Error())
}

// anthropicType is the Anthropic error type clients see for a status: Anthropic's
// own pairs (anthropicjson.TypeForStatus: 400 invalid_request_error, 401
// authentication_error, 402 billing_error, 403 permission_error, 404
// not_found_error, 413 request_too_large, 429 rate_limit_error, 500 api_error,
// 504 timeout_error, 529 overloaded_error, other 4xx invalid_request_error), and
// for Switchyard's own statuses: 503 (a chain's breakers open, no models, shutting
// down: try again later) overloaded_error, 502 (an upstream's broken or unreadable
// answer) api_error. The status itself is kept: the SDKs pick their error class
// from it.
func anthropicType(httpStatus int) string {
	if httpStatus == http.StatusServiceUnavailable {
		return anthropicjson.ErrorOverloaded
	}
	return anthropicjson.TypeForStatus(httpStatus)
}

// writeMessagesError writes err as Anthropic's error body with its HTTP status
// and the headers writeError gives (Retry-After, x-should-retry).
func writeMessagesError(w http.ResponseWriter, err error) {
	e := fromStatus(status.Convert(err))
	setErrorHeaders(w.Header(), e)
	id := setRequestIDHeader(w)
	w.WriteHeader(e.HTTPStatus)
	_, _ = w.Write(anthropicjson.ErrorJSON(anthropicType(e.HTTPStatus), e.Message, id))
}

// setRequestIDHeader repeats X-Request-Id as request-id, where Anthropic's SDKs
// read it, and returns it.
func setRequestIDHeader(w http.ResponseWriter) string {
	id := w.Header().Get("X-Request-Id")
	if id != "" {
		w.Header().Set("Request-Id", id)
	}
	return id
}

// messagesRouteError answers a request under /v1/messages that no route serves
// as Anthropic's SDKs read errors: 405 (Allow: POST) for a route served to POST
// only, 404 for a path Switchyard does not serve (the Message Batches API among
// them).
func messagesRouteError(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/messages" || r.URL.Path == "/v1/messages/count_tokens" {
		w.Header().Set("Allow", http.MethodPost)
		writeMessagesError(w, statusOf(apiError{httpStatus: http.StatusMethodNotAllowed, grpcCode: codes.Unimplemented,
			message: r.URL.Path + " takes POST, not " + r.Method}))
		return
	}
	writeMessagesError(w, statusOf(apiError{httpStatus: http.StatusNotFound, grpcCode: codes.Unimplemented,
		message: "Switchyard does not serve " + r.Method + " " + r.URL.Path + " (of Anthropic's API it serves POST /v1/messages and POST /v1/messages/count_tokens)"}))
}
