package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc/status"
)

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}

// writeError writes err as an OpenAI error body with its HTTP status.
func writeError(w http.ResponseWriter, err error) {
	e := fromStatus(status.Convert(err))
	setErrorHeaders(w.Header(), e)
	w.WriteHeader(e.HTTPStatus)
	_, _ = w.Write(appendErrorJSON(make([]byte, 0, 256), e))
}

// setErrorHeaders sets the headers of an error answer: Retry-After and
// retry-after-ms when the client may retry after a wait, x-should-retry, and the
// JSON content type.
func setErrorHeaders(h http.Header, e openAIError) {
	h.Del("Content-Length")
	if ms, err := strconv.ParseInt(e.RetryAfterMS, 10, 64); err == nil && ms > 0 {
		h.Set("Retry-After", strconv.FormatInt((ms+999)/1000, 10))
		h.Set("Retry-After-Ms", e.RetryAfterMS)
	}
	if e.ShouldRetry != "" {
		h.Set("X-Should-Retry", e.ShouldRetry)
	}
	h.Set("Content-Type", "application/json")
}

// routingError answers a request no route serves: a method the path does not
// take is 405 (grpc-gateway's own answer is a 501 server_error), anything else
// as grpc-gateway says.
func routingError(ctx context.Context, mux *runtime.ServeMux, m runtime.Marshaler, w http.ResponseWriter, r *http.Request, code int) {
	if code != http.StatusMethodNotAllowed {
		runtime.DefaultRoutingErrorHandler(ctx, mux, m, w, r, code)
		return
	}
	writeError(w, statusOf(apiError{httpStatus: http.StatusMethodNotAllowed, errType: "invalid_request_error",
		code: "method_not_allowed", message: r.Method + " is not a method " + r.URL.Path + " takes"}))
}

// gatewayErrorHandler is grpc-gateway's error hook: every REST error, routing
// errors included, leaves as an OpenAI error body.
func gatewayErrorHandler(_ context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, _ *http.Request, err error) {
	writeError(w, err)
}
