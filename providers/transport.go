package providers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// ErrAttemptTimeout is the cause of an attempt's context ended by its timeout
// (a provider's Timeout for one non-stream attempt).
var ErrAttemptTimeout = errors.New("attempt timeout")

// ErrFirstToken is the cause of a stream's context ended by its first-token
// deadline (resilience.first_token_timeout).
var ErrFirstToken = errors.New("stream first token timeout")

// Timeouts are what TransportError names when one of them ended an attempt.
type Timeouts struct {
	// Attempt is the whole non-stream attempt's bound; FirstToken a stream's wait
	// for its first content.
	Attempt, FirstToken time.Duration
}

// TransportError is the error of an attempt that got no (whole) answer from
// provider: ctx's own end when the caller left, a 504 when the attempt's timeout
// or the first-token deadline ended it (see ErrAttemptTimeout, ErrFirstToken),
// else a transport failure (502) or a network timeout (504). The message may
// quote the upstream's bytes: the caller redacts it.
func TransportError(ctx context.Context, provider string, t Timeouts, err error) error {
	if ctx.Err() != nil {
		switch cause := context.Cause(ctx); {
		case errors.Is(cause, ErrAttemptTimeout):
			return &Error{Provider: provider, Status: http.StatusGatewayTimeout, Timeout: true,
				Message: fmt.Sprintf("provider %s did not answer within %s", provider, t.Attempt), Err: err}
		case errors.Is(cause, ErrFirstToken):
			return &Error{Provider: provider, Status: http.StatusGatewayTimeout, Timeout: true, FirstToken: true,
				Code: "timeout", Err: err,
				Message: fmt.Sprintf("provider %s sent no content within %s (first_token_timeout)", provider, t.FirstToken)}
		}
		return ctx.Err()
	}
	var ne net.Error
	timeout := errors.As(err, &ne) && ne.Timeout()
	e := &Error{Provider: provider, Status: http.StatusBadGateway, Transport: !timeout, Timeout: timeout, Err: err,
		Message: fmt.Sprintf("provider %s is unreachable: %v", provider, RootCause(err))}
	if timeout {
		e.Status = http.StatusGatewayTimeout
		e.Message = fmt.Sprintf("provider %s timed out: %v", provider, RootCause(err))
	}
	return e
}

// RootCause is the innermost error err wraps.
func RootCause(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

// Unreadable is the error for upstream bytes that do not decode: the provider's
// fault, never the client's (502, a breaker failure, failover-eligible). The cause
// stays reachable for errors.Is, but the message says whose bytes they were. The
// caller redacts it.
func Unreadable(provider, what string, err error) *Error {
	return &Error{Provider: provider, Status: http.StatusBadGateway, Kind: KindUnreadable,
		Code: "upstream_unreadable", Err: err, Message: fmt.Sprintf("provider %s %s: %v", provider, what, err)}
}

// ErrorBody reads a non-2xx answer's body, up to MaxErrorBytes: an error's
// message. An answer that is not an error (a 101's body is the connection
// itself, open until the upstream closes it) is not read.
func ErrorBody(resp *http.Response) ([]byte, error) {
	if !IsErrorStatus(resp.StatusCode) {
		return nil, nil
	}
	return io.ReadAll(io.LimitReader(resp.Body, MaxErrorBytes))
}

// IsErrorStatus reports whether status is an error answer (4xx, 5xx); a
// non-2xx status outside them is UnexpectedStatus.
func IsErrorStatus(status int) bool { return status >= 400 && status <= 599 }

// UnexpectedStatus rewrites an upstream answer whose status is neither a
// success nor an error: a redirect (Switchyard follows none, so that neither a
// provider's credentials nor a client's prompt go to another address), a 1xx
// or a status above 599. The client sees 502 naming the provider and the
// status, never the status itself (a 101 left a client waiting on a protocol
// switch, a 304 had no body); the chain fails over, retries see the upstream's
// status (not retried: the same address answers the same), and the target is
// out of service until an operator fixes its base_url, like refused
// credentials.
func UnexpectedStatus(e *Error) {
	e.Message = fmt.Sprintf("provider %s answered %s, which is neither an answer nor an error "+
		"(Switchyard follows no redirects: check the provider's base_url)", e.Provider,
		strings.TrimSpace(fmt.Sprint(e.Status, " ", http.StatusText(e.Status))))
	e.Answered, e.Status = e.Status, http.StatusBadGateway
	e.Type, e.Code, e.Param = "server_error", "upstream_unexpected_status", ""
	e.Kind = KindUnexpectedStatus
}

// RefusedCredentials rewrites an upstream 401/403: it refused Switchyard's own
// key, not the client's, so the client sees 502 naming the provider (an SDK must
// not report its caller's key as invalid) and the chain fails over (the target is
// out of service until an operator fixes the key). Retries and breakers still see
// the upstream's status (Answered): a refused key is not retried.
func RefusedCredentials(e *Error) {
	e.Message = fmt.Sprintf("provider %s refused Switchyard's credentials (upstream %d %s): %s",
		e.Provider, e.Status, http.StatusText(e.Status), e.Message)
	e.Answered, e.Status = e.Status, http.StatusBadGateway
	e.Type, e.Code, e.Param = "server_error", "upstream_authentication_failed", ""
	e.Kind = KindUpstreamAuth
}

// HTTPClient is the pooled client every provider calls its upstream with:
// connectTimeout bounds dialling and the TLS handshake, headerTimeout the wait
// for response headers (zero: none), and observe hears the answers' rate-limit
// headers (nil: none). HTTP/1.1 even where an HTTPS upstream offers HTTP/2:
// measured with the load harness (-upstream h1 / h2), over HTTP/2 Switchyard
// spent 15-24 % more CPU per request (HPACK, a goroutine per request write) and
// served fewer requests per second, non-stream and stream alike.
func HTTPClient(connectTimeout, headerTimeout time.Duration, observe QuotaObserver) *http.Client {
	dialer := &net.Dialer{Timeout: connectTimeout, KeepAlive: 30 * time.Second}
	p := new(http.Protocols)
	p.SetHTTP1(true)
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialBodies(dialer),
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   connectTimeout,
		ResponseHeaderTimeout: headerTimeout,
		Protocols:             p,
	}
	return &http.Client{Transport: ObserveQuota(tr, observe), CheckRedirect: noRedirects}
}

// noRedirects makes a redirect the answer (UnexpectedStatus) instead of a
// request to its Location: net/http would send the body there again, with the
// provider's key headers (x-api-key, api-key) to any host and Authorization to
// any port of the same one.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// dialBodies dials as d does, with TCP connections as bodyConns.
func dialBodies(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if tc, ok := c.(*net.TCPConn); ok {
			return bodyConn{tc}, nil
		}
		return c, err
	}
}

// bodyConn is an upstream connection that writes a request body sent from
// Pieces in one vectored write. net/http hands a plain-HTTP connection the body
// wrapped in an io.LimitedReader (the Content-Length) and, without this, copies
// it 32 KiB at a time through a buffer of its own: a memmove and a write call
// per 32 KiB of a long prompt. Any other reader goes the TCP connection's way.
// (Over TLS the connection underneath sees the records tls.Conn writes.)
type bodyConn struct{ *net.TCPConn }

func (c bodyConn) ReadFrom(r io.Reader) (int64, error) {
	if n, ok, err := sendPieces(c.TCPConn, r); ok {
		return n, err
	}
	return c.TCPConn.ReadFrom(r)
}

// sendPieces writes r to w at once when it is a body sent from Pieces within
// its Content-Length, as net/http hands a body over (an io.LimitedReader),
// and counts what it wrote off the limit; ok is false, with nothing written,
// for any other reader.
func sendPieces(w io.Writer, r io.Reader) (n int64, ok bool, err error) {
	lr, limited := r.(*io.LimitedReader)
	if !limited {
		return 0, false, nil
	}
	pr, pieces := lr.R.(*piecesReader)
	if !pieces {
		return 0, false, nil
	}
	if n, ok, err = pr.writeWithin(w, lr.N); ok {
		lr.N -= n
	}
	return n, ok, err
}
