package switchyard

import (
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// reason is the ErrorInfo reason Switchyard attaches to its errors.
func reason(err error) string {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == "switchyard" {
			return info.GetReason()
		}
	}
	return ""
}

// HTTPStatus is the HTTP status Switchyard's REST surface would have answered (0 if unknown).
func HTTPStatus(err error) int {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == "switchyard" {
			n := 0
			for _, c := range info.GetMetadata()["http_status"] {
				n = n*10 + int(c-'0')
			}
			return n
		}
	}
	return 0
}

// IsBreakerOpen reports a call refused because the target's circuit breaker is open.
func IsBreakerOpen(err error) bool { return err != nil && reason(err) == "circuit_breaker_open" }

// IsRateLimited reports a 429 (the upstream's or Switchyard's own: each
// carries http_status 429). grpc-go's own ResourceExhausted, a message over
// a size limit, is none: retrying it cannot succeed.
func IsRateLimited(err error) bool { return err != nil && HTTPStatus(err) == 429 }

// IsNotFound reports an unknown model (or admin object).
func IsNotFound(err error) bool { return err != nil && status.Code(err) == codes.NotFound }

// IsStreamIncomplete reports a stream that stopped before its final chunk.
func IsStreamIncomplete(err error) bool { return err != nil && reason(err) == "stream_incomplete" }

// IsUnauthenticated reports a missing or wrong key.
func IsUnauthenticated(err error) bool {
	return err != nil && status.Code(err) == codes.Unauthenticated
}
