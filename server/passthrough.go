package server

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/router"
)

// Passthrough: /p/{provider}/{path...} forwards any method and path under a
// configured provider's base URL, body and query byte for byte both ways (no JSON
// processing; the answer is streamed as it arrives and flushed per read, SSE
// included). The client's Switchyard key is removed and the provider's own
// credentials added (providers.Passthrough), which are redacted from every
// relayed header value and from an error answer's body. It passes the interceptor chain like
// every inference call (auth with the master key, request id, log line, metrics,
// drain), the provider account's own limits (providers.X.limits: a call at the
// limit is a 429 with no upstream call), and the provider's guard: its breaker
// refuses while open and counts the answers; idempotent requests (GET, HEAD,
// OPTIONS, PUT, DELETE, or any request with an Idempotency-Key) are retried as
// the provider's retry policy says, a POST or PATCH without Idempotency-Key gets
// exactly one attempt. There is no failover:
// no other target is equivalent for an arbitrary path.

// passthroughMethod names passthrough calls to the chain: the inference key
// (it is under /switchyard.v1.), and the log line's and metrics' method.
const passthroughMethod = "/switchyard.v1.Passthrough/Forward"

// passthroughPrefix starts every passthrough path.
const passthroughPrefix = "/p/"

// passthroughService forwards passthrough calls.
type passthroughService struct {
	log *slog.Logger
	// router runs each call on its target (router.Direct).
	router *router.Router
	// targets are the providers by name.
	targets map[string]router.Target
	// providers gives each provider's type, for the error of one without passthrough.
	providers map[string]ProviderInfo
}

// passthrough serves /p/{provider}/{path...}. The body is read within
// max_body_bytes (it is replayed on retries); the answer is written by the
// handler itself, inside the chain, so the request line logs its status. An
// answer that began but did not reach its end (the upstream cut it, the drain
// ended it) aborts the connection once the chain has observed the call: its
// status is out, and only a connection ended without a chunked body's last
// chunk (or short of its Content-Length) tells the client it is incomplete.
// The panic is raised here, outside the chain, whose recovery would take it
// for a bug; net/http closes the connection on it and logs nothing.
func (f *front) passthrough(w http.ResponseWriter, r *http.Request) {
	if !f.authorized(w, r, passthroughMethod) {
		return
	}
	var body []byte
	if r.Body != nil && r.Body != http.NoBody {
		var ok bool
		if body, ok = f.readBody(w, r, passthroughMethod); !ok {
			return
		}
	}
	sink := &headerSink{method: passthroughMethod}
	ctx := grpc.NewContextWithServerTransportStream(incomingContext(r), sink)
	info := &grpc.UnaryServerInfo{Server: f.in.pass, FullMethod: passthroughMethod}
	var rl relay
	_, err := f.in.unary(ctx, nil, info, func(ctx context.Context, _ any) (any, error) {
		return nil, f.in.pass.serve(ctx, w, r, body, sink, &rl)
	})
	if rl.begun && !rl.whole {
		panic(http.ErrAbortHandler)
	}
	if err != nil && !rl.begun {
		copyHeaders(w, sink)
		writeError(w, err)
	}
}

// relay is how far a passthrough answer went: begun once the upstream's status
// is written (an error after it is only the request line's and the record's),
// whole once its body was relayed to its end.
type relay struct{ begun, whole bool }

// serve forwards one passthrough call, noting in rl how far its answer went.
func (s *passthroughService) serve(ctx context.Context, w http.ResponseWriter, r *http.Request, body []byte,
	sink *headerSink, rl *relay) error {
	name, path := splitPassthrough(r.URL)
	t, ok := s.targets[name]
	if !ok {
		return statusOf(apiError{httpStatus: http.StatusNotFound, errType: "not_found_error", code: "provider_not_found",
			param: "provider", message: "no provider named '" + name + "' is configured (passthrough is /p/{provider}/{path})"})
	}
	if leavesBase(path.Path) {
		return statusOf(apiError{httpStatus: http.StatusBadRequest, errType: "invalid_request_error", code: "invalid_path", param: "path",
			message: "a passthrough path may not have . or .. segments (they would leave the provider's base_url)"})
	}
	rep := reportOf(ctx)
	rep.setTarget(router.Route{Provider: name})
	fw, ok := t.Provider.(providers.Passthrough)
	if !ok {
		return toStatus(s.log, unsupportedEndpoint(name, s.providers[name].Type, "passthrough"))
	}
	_ = grpc.SetHeader(ctx, metadata.Pairs(mdTarget, name))
	out := &http.Request{Method: r.Method, Header: forwardHeaders(r.Header),
		URL: &url.URL{Path: path.Path, RawPath: path.RawPath, RawQuery: r.URL.RawQuery}}
	call := router.Call{RequestID: requestID(ctx), IdempotencyKey: validIdempotencyKey(r.Header.Get("Idempotency-Key")),
		Trace: &rep.trace, Op: "passthrough"}
	resp, held, err := forward(ctx, s.router, name, fw, call, out, body, retriable(r.Method, call.IdempotencyKey != ""))
	defer held.End() // the account's max_concurrency holds the call until its answer is relayed
	if resp == nil {
		return toStatus(s.log, err)
	}
	defer resp.Body.Close()
	rl.begun = true
	copyHeaders(w, sink)
	secrets := fw.Secrets()
	relayHeaders(w.Header(), resp.Header, secrets)
	answer := io.Reader(resp.Body)
	if resp.StatusCode >= 400 && len(secrets) > 0 && r.Method != http.MethodHead {
		// An error's text may echo the provider's credentials (a 401's
		// "Incorrect API key provided: sk-…"); a success is the client's data,
		// relayed byte for byte.
		answer = redactError(w.Header(), resp.Body, secrets)
	}
	w.WriteHeader(resp.StatusCode)
	upstream, cerr := s.copyBody(ctx, w, answer)
	switch {
	case cerr == nil:
		rl.whole = true
	case ctx.Err() != nil: // the client went away, or the drain ended the call (drainStage says so)
		return toStatus(s.log, ctx.Err())
	case !upstream: // the client's connection failed, or it stopped reading
		return status.Error(codes.Canceled, "the client stopped reading the answer before its end")
	default:
		// Named as a chat stream cut after its first byte is: the client has a
		// status that promised an answer and got part of it.
		return statusOf(apiError{httpStatus: http.StatusBadGateway, errType: "server_error", code: "stream_incomplete",
			message: "provider " + name + " cut its answer short: " + cerr.Error()})
	}
	if resp.StatusCode >= 400 {
		// For the request line and metrics only: the upstream's own answer was relayed.
		return statusOf(apiError{httpStatus: resp.StatusCode, errType: typeForStatus(resp.StatusCode),
			message: "provider " + name + " answered " + resp.Status})
	}
	return nil
}

// splitPassthrough reads /p/{provider}/{path...}: the provider's name and the
// rest of the path, escaped as the client sent it.
func splitPassthrough(u *url.URL) (string, *url.URL) {
	raw := strings.TrimPrefix(u.EscapedPath(), passthroughPrefix)
	name, rest, _ := strings.Cut(raw, "/")
	name, _ = url.PathUnescape(name)
	out := &url.URL{}
	if rest != "" {
		p, err := url.PathUnescape("/" + rest)
		if err != nil {
			p = "/" + rest
		}
		out.Path, out.RawPath = p, "/"+rest
	}
	return name, out
}

// leavesBase reports whether a passthrough path (unescaped: %2e%2e is ..) has a
// dot segment, which the upstream would resolve above the provider's base_url.
func leavesBase(path string) bool {
	for seg := range strings.SplitSeq(path, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

// retriable reports whether a passthrough call may be sent more than once: an
// idempotent method (RFC 9110 §9.2.2), or any method with an Idempotency-Key.
func retriable(method string, idempotencyKey bool) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodDelete, http.MethodTrace:
		return true
	}
	return idempotencyKey
}

// copyBody streams the answer to the client, flushed after every read so that an
// event stream reaches the client as it is sent; each write is bounded by the
// front's boundedWriter, as every REST write is. An error says which side
// broke the copy: upstream when the answer could not be read to its end (a
// chunked body without its last chunk, a body short of its Content-Length, a
// reset), else the client could not be written to.
func (s *passthroughService) copyBody(ctx context.Context, w http.ResponseWriter, body io.Reader) (upstream bool, err error) {
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return false, werr
			}
			if ferr := rc.Flush(); ferr != nil {
				return false, ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return true, err
		}
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
	}
}

// redactError is an error answer's body with secrets redacted as it streams; h
// is the answer's relayed headers. Its length may change: it goes without
// Content-Length. A body in gzip or deflate is relayed decoded (the client
// asked for it: it reads it too); one in an encoding not read here (br, zstd,
// several) cannot be redacted and is not relayed: the status and headers are.
func redactError(h http.Header, body io.Reader, secrets providers.Secrets) io.Reader {
	h.Del("Content-Length")
	enc := strings.ToLower(textproto.TrimString(h.Get("Content-Encoding")))
	if enc == "" || enc == "identity" {
		return secrets.Reader(body)
	}
	h.Del("Content-Encoding")
	if enc == "gzip" || enc == "x-gzip" || enc == "deflate" {
		return secrets.Reader(&decoded{enc: enc, r: body})
	}
	return http.NoBody
}

// decoded is a gzip or deflate (zlib) body, decoded; the decoder starts at the
// first read, so that the answer's status is not held for the body's first
// bytes. A body that does not decode is the upstream's broken answer.
type decoded struct {
	enc string
	r   io.Reader
	d   io.Reader
}

func (x *decoded) Read(p []byte) (int, error) {
	if x.d == nil {
		br := bufio.NewReader(x.r)
		head, err := br.Peek(2)
		switch {
		case len(head) == 0 && errors.Is(err, io.EOF):
			return 0, io.EOF // an empty body, labelled all the same: whole
		case x.enc != "deflate":
			x.d, err = gzip.NewReader(br)
		case len(head) == 2 && head[0]&0x0f == 8 && (uint16(head[0])<<8|uint16(head[1]))%31 == 0:
			x.d, err = zlib.NewReader(br) // HTTP's deflate: zlib, its header checked as RFC 1950 says
		default:
			x.d, err = flate.NewReader(br), nil // raw DEFLATE, which some servers send as deflate
		}
		if err != nil {
			return 0, err
		}
	}
	return x.d.Read(p)
}

// forward runs the call on the provider's target (router.Direct: its account
// limits, its guard with the provider's own breaker, spans) and returns the
// answer to relay: a success, or the last error status once retries are spent.
// A nil answer comes with the error that left none (an open breaker, a target
// at its limits, no answer at all). A call that must not be repeated gets one
// attempt, counted by the breaker like any other. held is the room the
// account's limits gave the call, for the caller to end once the answer is read.
func forward(ctx context.Context, r *router.Router, provider string, fw providers.Passthrough, call router.Call,
	out *http.Request, body []byte, retry bool) (*http.Response, router.Held, error) {
	var resp *http.Response
	_, held, err := router.Direct(r, ctx, provider, call, !retry, func(ctx context.Context, _ router.Target, a providers.Attempt) (*http.Response, error) {
		if resp != nil {
			resp.Body.Close() // a retried answer is dropped
			resp = nil
		}
		req := out.Clone(ctx)
		req.Body, req.ContentLength = http.NoBody, 0
		if len(body) > 0 {
			req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
			req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		}
		got, err := fw.Forward(ctx, a, req)
		if err != nil {
			return nil, err
		}
		resp = got
		return got, answerOutcome(provider, got)
	})
	if resp != nil {
		return resp, held, nil
	}
	return nil, held, err
}

// answerOutcome is how an answer counts to the guard: an error status is an
// outcome with that status, retried (when the call may be) and counted by the
// breaker as the provider's policy says; the answer is relayed whatever it is.
func answerOutcome(provider string, resp *http.Response) error {
	if resp.StatusCode < 400 {
		return nil
	}
	return &upstreamAnswer{provider: provider, status: resp.StatusCode, delay: providers.RetryAfter(resp.Header, time.Now())}
}

// upstreamAnswer is an upstream's error status, as the guard sees it.
type upstreamAnswer struct {
	provider string
	status   int
	delay    time.Duration
}

func (e *upstreamAnswer) Error() string {
	return "provider " + e.provider + " answered " + http.StatusText(e.status)
}
func (e *upstreamAnswer) UpstreamStatus() int       { return e.status }
func (e *upstreamAnswer) TransportFailure() bool    { return false }
func (e *upstreamAnswer) LocalTimeout() bool        { return false }
func (e *upstreamAnswer) RetryDelay() time.Duration { return e.delay }
