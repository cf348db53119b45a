package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/switchyard/switchyard/openaijson"
	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/resilience"
	"github.com/switchyard/switchyard/router"
)

// errorDomain is the ErrorInfo domain of Switchyard's errors.
const errorDomain = "switchyard"

// apiError is what both surfaces report: an OpenAI error body and an HTTP status,
// carried on gRPC as a status with an ErrorInfo detail.
type apiError struct {
	httpStatus int
	message    string
	errType    string // OpenAI "type"
	code       string // OpenAI "code"
	param      string // OpenAI "param"
	// retryAfter, when set, tells clients when trying again makes sense.
	retryAfter time.Duration
	// final marks an error after Switchyard spent its own retries: clients should
	// not multiply them (x-should-retry: false).
	final bool
	// grpcCode overrides the code derived from httpStatus.
	grpcCode codes.Code
}

// invalidRequest is a 400 naming the offending parameter.
func invalidRequest(param, message string) error {
	return statusOf(apiError{httpStatus: http.StatusBadRequest, message: message, errType: "invalid_request_error", param: param})
}

// toStatus is the one place where domain errors become gRPC statuses.
// maxClientRetryAfter caps the wait an upstream's Retry-After passes on to clients:
// a day covers a daily quota, and no hostile or broken upstream can tell clients to
// wait for centuries.
const maxClientRetryAfter = 24 * time.Hour

func toStatus(log *slog.Logger, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	var (
		oe *resilience.OpenError
		le *resilience.SlotError
		de *openaijson.Error
		pe *providers.Error
		se *providers.StreamError
		nf *router.NotFoundError
		sa *router.SaturatedError
	)
	switch {
	case errors.As(err, &oe):
		e := apiError{httpStatus: http.StatusServiceUnavailable, message: oe.Error(), errType: "server_error",
			code: "circuit_breaker_open", retryAfter: oe.RetryAfter, final: errors.Is(err, resilience.ErrRetriesExhausted)}
		if e.final {
			e.retryAfter = 0 // a walked chain ending at an open breaker: the chain was the retry
		}
		return statusOf(e)
	case errors.As(err, &sa): // every target at its provider account's own limits
		kind := "requests"
		if sa.Limit == "tokens" {
			kind = "tokens"
		}
		return statusOf(apiError{httpStatus: http.StatusTooManyRequests, message: sa.Error(), errType: kind,
			code: "rate_limit_exceeded", retryAfter: max(sa.RetryAfter, time.Second)})
	case errors.As(err, &le):
		return statusOf(apiError{httpStatus: http.StatusServiceUnavailable, message: le.Error(), errType: "server_error",
			code: "circuit_breaker_open", retryAfter: time.Second})
	case errors.Is(err, router.ErrInvalidVirtualModel):
		return statusOf(apiError{httpStatus: http.StatusBadRequest, message: err.Error(), errType: "invalid_request_error",
			code: "invalid_virtual_model", param: "virtual_model"})
	case errors.Is(err, router.ErrConfigManaged):
		return statusOf(apiError{httpStatus: http.StatusConflict, grpcCode: codes.FailedPrecondition, message: err.Error(),
			errType: "invalid_request_error", code: "config_managed"})
	case errors.Is(err, router.ErrVirtualModelNotFound), errors.Is(err, router.ErrUnknownProvider),
		errors.Is(err, router.ErrBreakerNotFound):
		return statusOf(apiError{httpStatus: http.StatusNotFound, message: err.Error(), errType: "not_found_error", code: "not_found"})
	case errors.As(err, &nf):
		return statusOf(apiError{httpStatus: http.StatusNotFound, message: nf.Error(), errType: "invalid_request_error",
			code: "model_not_found", param: "model"})
	case errors.Is(err, router.ErrNoModels):
		return statusOf(apiError{httpStatus: http.StatusServiceUnavailable, message: "no models are available: every provider's model discovery failed and none are configured",
			errType: "server_error", code: "no_models"})
	case errors.As(err, &se):
		return statusOf(apiError{httpStatus: http.StatusBadGateway, message: se.Error(), errType: "server_error", code: "stream_incomplete"})
	case errors.As(err, &pe):
		e := apiError{httpStatus: pe.Status, message: pe.Error(), errType: orDefault(pe.Type, typeForStatus(pe.Status)),
			code: pe.Code, param: pe.Param, final: errors.Is(err, resilience.ErrRetriesExhausted)}
		if up := pe.UpstreamStatus(); !e.final && (up == http.StatusTooManyRequests || up == http.StatusServiceUnavailable) {
			// Not retried here (Retry-After beyond max_backoff, no budget, a probe):
			// the client may, after the upstream's own wait.
			e.retryAfter = min(pe.RetryAfter, maxClientRetryAfter)
		}
		return statusOf(e)
	case errors.As(err, &de): // after pe: an upstream's unreadable bytes are its fault, not the client's
		return statusOf(apiError{httpStatus: http.StatusBadRequest, message: de.Error(), errType: "invalid_request_error", param: de.Param})
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, "the request was cancelled")
	case errors.Is(err, context.DeadlineExceeded):
		return statusOf(apiError{httpStatus: http.StatusGatewayTimeout, message: "the request's deadline passed before an answer arrived",
			errType: "timeout_error", code: "timeout"})
	}
	log.Error("internal error", "error", err.Error())
	return status.Error(codes.Internal, "internal error")
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func statusOf(e apiError) error {
	code := codeForHTTP(e.httpStatus)
	if e.grpcCode != codes.OK {
		code = e.grpcCode
	}
	// Text an upstream sent may not be UTF-8 (a Latin-1 error page): a status
	// whose text is not is sent without its details by grpc-go, so it is mended
	// here, as REST's JSON mends it.
	e.message, e.errType, e.code, e.param = asUTF8(e.message), asUTF8(e.errType), asUTF8(e.code), asUTF8(e.param)
	st := status.New(code, e.message)
	md := map[string]string{"http_status": strconv.Itoa(e.httpStatus), "type": e.errType}
	if e.code != "" {
		md["code"] = e.code
	}
	if e.param != "" {
		md["param"] = e.param
	}
	if e.final {
		md["should_retry"] = "false"
	}
	details := []protoadapt.MessageV1{}
	if e.retryAfter > 0 {
		md["retry_after_ms"] = strconv.FormatInt(e.retryAfter.Milliseconds(), 10)
		details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(e.retryAfter)})
	}
	reason := orDefault(e.code, e.errType)
	details = append([]protoadapt.MessageV1{&errdetails.ErrorInfo{Reason: reason, Domain: errorDomain, Metadata: md}}, details...)
	if d, err := st.WithDetails(details...); err == nil {
		st = d
	}
	return st.Err()
}

// asUTF8 is s with what is not UTF-8 replaced by U+FFFD.
func asUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// typeForStatus is OpenAI's error "type" for a status.
func typeForStatus(s int) string {
	switch {
	case s == http.StatusUnauthorized:
		return "authentication_error"
	case s == http.StatusForbidden:
		return "permission_error"
	case s == http.StatusNotFound:
		return "not_found_error"
	case s == http.StatusTooManyRequests:
		return "rate_limit_error"
	case s >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

// codeForHTTP maps an HTTP status to the gRPC code a gRPC caller sees.
func codeForHTTP(s int) codes.Code {
	switch s {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		return codes.InvalidArgument
	case http.StatusUnauthorized:
		return codes.Unauthenticated
	case http.StatusPaymentRequired, http.StatusForbidden:
		return codes.PermissionDenied
	case http.StatusNotFound:
		return codes.NotFound
	case http.StatusRequestTimeout, http.StatusGatewayTimeout:
		return codes.DeadlineExceeded
	case http.StatusConflict:
		return codes.Aborted
	case http.StatusTooManyRequests:
		return codes.ResourceExhausted
	case 499:
		return codes.Canceled
	case http.StatusNotImplemented:
		return codes.Unimplemented
	case http.StatusBadGateway, http.StatusServiceUnavailable:
		return codes.Unavailable
	}
	if s >= 500 {
		return codes.Internal
	}
	return codes.FailedPrecondition
}

// openAIError is the REST shape of an error, read back from a status.
type openAIError struct {
	HTTPStatus int
	Message    string
	Type       string
	Code       string
	Param      string
	// RetryAfterMS and ShouldRetry become Retry-After / retry-after-ms / x-should-retry.
	RetryAfterMS string
	ShouldRetry  string
}

// fromStatus reads the REST error out of a gRPC status.
func fromStatus(st *status.Status) openAIError {
	e := openAIError{Message: st.Message()}
	for _, d := range st.Details() {
		info, ok := d.(*errdetails.ErrorInfo)
		if !ok || info.GetDomain() != errorDomain {
			continue
		}
		md := info.GetMetadata()
		e.HTTPStatus, _ = strconv.Atoi(md["http_status"])
		e.Type, e.Code, e.Param = md["type"], md["code"], md["param"]
		e.RetryAfterMS, e.ShouldRetry = md["retry_after_ms"], md["should_retry"]
	}
	if e.HTTPStatus == 0 {
		e.HTTPStatus = runtime.HTTPStatusFromCode(st.Code())
	}
	if e.Type == "" {
		e.Type = typeForStatus(e.HTTPStatus)
	}
	if e.Code == "" {
		switch st.Code() {
		case codes.Unauthenticated:
			e.Code = "invalid_api_key"
		case codes.Unimplemented, codes.NotFound:
			e.Code = "not_found"
		}
	}
	return e
}

// appendErrorJSON writes {"error":{"message","type","param","code"}}.
func appendErrorJSON(b []byte, e openAIError) []byte {
	b = append(b, `{"error":{"message":`...)
	b = appendJSONString(b, e.Message)
	b = append(b, `,"type":`...)
	b = appendJSONString(b, e.Type)
	b = append(b, `,"param":`...)
	b = appendNullable(b, e.Param)
	b = append(b, `,"code":`...)
	b = appendNullable(b, e.Code)
	return append(b, "}}"...)
}

func appendNullable(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return appendJSONString(b, s)
}
