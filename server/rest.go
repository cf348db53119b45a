package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	adminpb "github.com/switchyard/switchyard/gen/switchyard/admin/v1"
	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/bufpool"
	"github.com/switchyard/switchyard/openaijson"
)

// restOptions configure the REST surface.
type restOptions struct {
	in           inProcess
	metrics      http.Handler
	auth         authorizer
	writeTimeout time.Duration
	readTimeout  time.Duration
	log          *slog.Logger
	maxBodyBytes int64
	ready        func() (bool, string)
}

// newREST returns the REST surface: a front handler for health, body limits and the
// chat completions route (in process, through the gRPC interceptor chain), and
// grpc-gateway for the other routes, reached through conn so that they pass the
// same interceptors as gRPC calls.
func newREST(ctx context.Context, conn *grpc.ClientConn, opt restOptions) (http.Handler, error) {
	mux := runtime.NewServeMux(
		runtime.WithMarshalerOption(runtime.MIMEWildcard, jsonMarshaler{log: opt.log}),
		runtime.WithErrorHandler(gatewayErrorHandler),
		runtime.WithRoutingErrorHandler(routingError),
		// A POST with a form's content type is not read as the GET its path
		// also serves (grpc-gateway's fallback answered a write with a read).
		runtime.WithDisablePathLengthFallback(),
		// SDKs escape the "/" of "provider/model" in paths (/v1/models/up%2Fgpt-4o).
		runtime.WithUnescapingMode(runtime.UnescapingModeAllCharacters),
		runtime.WithIncomingHeaderMatcher(incomingHeader),
		runtime.WithOutgoingHeaderMatcher(outgoingHeader),
		runtime.WithOutgoingTrailerMatcher(func(string) (string, bool) { return "", false }),
		runtime.WithMetadata(func(context.Context, *http.Request) metadata.MD { return metadata.Pairs(mdSurface, surfaceREST) }),
	)
	if err := pb.RegisterModelServiceHandler(ctx, mux, conn); err != nil {
		return nil, err
	}
	if err := adminpb.RegisterAdminServiceHandler(ctx, mux, conn); err != nil {
		return nil, err
	}
	f := &front{log: opt.log, mux: mux, in: opt.in, opt: opt}
	return f, nil
}

// incomingHeader forwards the headers handlers read as gRPC metadata.
func incomingHeader(key string) (string, bool) {
	md, ok := forwardedHeaders[http.CanonicalHeaderKey(key)]
	return md, ok
}

// forwardedHeaders are the REST headers handlers read, by canonical name, with
// the gRPC metadata key each becomes.
var forwardedHeaders = map[string]string{
	"Authorization":   mdAuthorization,
	"X-Request-Id":    mdRequestID,
	"Idempotency-Key": mdIdempotencyKey,
	"Traceparent":     "traceparent",
	"Tracestate":      "tracestate",
	"Anthropic-Beta":  mdAnthropicBeta,
}

// outgoingHeader lets only Switchyard's own response metadata out as headers.
func outgoingHeader(key string) (string, bool) {
	switch key {
	case mdTarget:
		return "X-Switchyard-Target", true
	case mdRequestID:
		return "X-Request-Id", true
	case mdLimitRequests:
		return "X-Ratelimit-Limit-Requests", true // the rate limit headers, named as OpenAI names them
	case mdLimitTokens:
		return "X-Ratelimit-Limit-Tokens", true
	case mdRemainingRequests:
		return "X-Ratelimit-Remaining-Requests", true
	case mdRemainingTokens:
		return "X-Ratelimit-Remaining-Tokens", true
	case mdResetRequests:
		return "X-Ratelimit-Reset-Requests", true
	case mdResetTokens:
		return "X-Ratelimit-Reset-Tokens", true
	}
	if name, ok := usageHeaders[key]; ok { // the usage ledger's (server/usage.go)
		return name, true
	}
	return "", false
}

type front struct {
	log *slog.Logger
	mux *runtime.ServeMux
	in  inProcess
	opt restOptions
}

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.opt.writeTimeout > 0 {
		bw := boundWrites(w, f.opt.writeTimeout)
		defer bw.settle()
		w = bw
	}
	switch r.URL.Path {
	case "/health":
		writeJSON(w, http.StatusOK, `{"status":"ok"}`)
		return
	case "/health/ready":
		ok, detail := f.opt.ready()
		if !ok {
			writeJSON(w, http.StatusServiceUnavailable, `{"status":"not_ready","detail":`+string(appendJSONString(nil, detail))+`}`)
			return
		}
		writeJSON(w, http.StatusOK, `{"status":"ready","detail":`+string(appendJSONString(nil, detail))+`}`)
		return
	case "/metrics":
		f.opt.metrics.ServeHTTP(w, r)
		return
	case "/v1/messages", "/v1/messages/count_tokens":
		if r.Method == http.MethodPost {
			f.messages(w, r) // Anthropic-shaped clients (messages.go)
			return
		}
	case "/v1/chat/completions":
		if r.Method == http.MethodPost {
			// Stream or not is in the body: the refusal is logged as CreateChatCompletion.
			if f.authorized(w, r, pb.ChatService_CreateChatCompletion_FullMethodName) {
				f.chatCompletions(w, r)
			}
			return
		}
	case "/v1/embeddings":
		if r.Method == http.MethodPost {
			if f.authorized(w, r, pb.EmbeddingService_CreateEmbeddings_FullMethodName) {
				f.embeddings(w, r)
			}
			return
		}
	}
	if r.URL.Path == "/v1/messages" || strings.HasPrefix(r.URL.Path, "/v1/messages/") {
		messagesRouteError(w, r) // a method or a path Switchyard does not serve, in Anthropic's shape
		return
	}
	if strings.HasPrefix(r.URL.Path, passthroughPrefix) {
		f.passthrough(w, r)
		return
	}
	method, ok := adminBodyRoute(r.Method, r.URL.Path)
	if ok && !f.authorized(w, r, method) {
		return
	}
	if r.Body != nil && r.Body != http.NoBody {
		// Every body is bounded, admin ones too: read here, within the limit and the
		// read deadline, so that grpc-gateway decodes bytes already checked.
		body, ok := f.readBody(w, r, method)
		if !ok {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	asText(r.URL)
	f.mux.ServeHTTP(w, r)
}

// asText reads what is not UTF-8 in u's path and query (%ff) as U+FFFD, as
// a JSON body's strings are read: grpc-gateway would put the bytes in a proto
// string, which the in-process client refuses to send (a 500 with no request
// line), and it ignores a parameter no field has, which must stay a 200.
func asText(u *url.URL) {
	if !utf8.ValidString(u.Path) {
		u.Path, u.RawPath = strings.ToValidUTF8(u.Path, "\uFFFD"), ""
	}
	if u.RawQuery == "" {
		return
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return // grpc-gateway answers a query it cannot parse itself
	}
	changed := false
	for k, vs := range q {
		for i, v := range vs {
			if !utf8.ValidString(v) {
				vs[i], changed = strings.ToValidUTF8(v, "\uFFFD"), true
			}
		}
		if !utf8.ValidString(k) {
			delete(q, k) // a name that is not text is no field's
			changed = true
		}
	}
	if changed {
		u.RawQuery = q.Encode()
	}
}

func writeJSON(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, body)
}

// chatCompletions reads the body (within the size limit), rejects unreadable
// requests with a 400 naming the parameter, and sends "stream": true to the SSE
// handler; everything else continues through grpc-gateway.
func (f *front) chatCompletions(w http.ResponseWriter, r *http.Request) {
	// A long body is read into a lent buffer: the conversation stays in it
	// (messages_json) and is sent to the upstream from it; it is given back when
	// this handler and every upstream body reading from it are done. Not on a
	// panic, recovered by the chain or not (settling): a hedge's other attempt
	// may still be reading it; bufpool takes it back once nothing refers to
	// its lending (the attempt's context carries it).
	var ref bufpool.Ref
	if n := readSize(r.ContentLength); n >= bufpool.MinSize {
		ref = bufpool.Get(int(n))
	}
	if f.chatCompletionsIn(w, r, ref) {
		ref.Release()
	}
}

// chatCompletionsIn is chatCompletions with the body's buffer; false when the
// method panicked.
func (f *front) chatCompletionsIn(w http.ResponseWriter, r *http.Request, ref bufpool.Ref) bool {
	const method = pb.ChatService_CreateChatCompletion_FullMethodName
	body, err := f.bodyInto(w, r, ref.Buf())
	if err != nil {
		writeError(w, f.refused(w, r, method, err))
		return true
	}
	if ref != (bufpool.Ref{}) {
		r = r.WithContext(bufpool.With(r.Context(), ref))
	}
	req := &pb.ChatCompletionRequest{}
	if err := decodeSafely(f.log, "decoding a REST chat request", func() error {
		return openaijson.UnmarshalChat(body, req) // the conversation kept as bytes
	}); err != nil {
		writeError(w, f.refused(w, r, method, toStatus(f.log, err)))
		return true
	}
	if req.GetStream() {
		return f.stream(w, r, req)
	}
	return f.unaryChat(w, r, req)
}

// readBody reads a request body within max_body_bytes and the read deadline; when
// it cannot, it answers (413, 408 and close, or 400) and returns false.
func (f *front) readBody(w http.ResponseWriter, r *http.Request, method string) ([]byte, bool) {
	body, err := f.bodyOf(w, r)
	if err != nil {
		writeError(w, f.refused(w, r, method, err))
		return nil, false
	}
	return body, true
}

// refused observes a call the front refuses before the chain (its body too
// large, too slow, unreadable, or not a request) as the chain observes any
// call's end: its request line, metrics and span (chain.refuse), its
// x-request-id on w. It returns err, for the caller to write in its surface's
// shape. method "" (a route that has no method) is not observed.
func (f *front) refused(w http.ResponseWriter, r *http.Request, method string, err error) error {
	if method == "" {
		return err
	}
	sink := &headerSink{method: method}
	ctx := grpc.NewContextWithServerTransportStream(incomingContext(r), sink)
	err = f.in.refuse(ctx, method, err)
	copyHeaders(w, sink)
	return err
}

// bodyOf is readBody's read: the error is the answer to give (a 408 also closes
// the connection).
func (f *front) bodyOf(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return f.bodyInto(w, r, nil)
}

// bodyInto is bodyOf reading into buf when it has room (else as readAll does).
func (f *front) bodyInto(w http.ResponseWriter, r *http.Request, buf []byte) ([]byte, error) {
	body, err := readAll(http.MaxBytesReader(w, r.Body, f.opt.maxBodyBytes), r.ContentLength, buf)
	if err == nil {
		return body, nil
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		w.Header().Set("Connection", "close")
		return nil, statusOf(apiError{httpStatus: http.StatusRequestTimeout, errType: "invalid_request_error",
			code: "request_timeout", message: "the request was not received within " + f.opt.readTimeout.String()})
	case errors.As(err, &tooBig):
		return nil, statusOf(apiError{httpStatus: http.StatusRequestEntityTooLarge, errType: "invalid_request_error",
			code: "request_too_large", message: "request body is larger than the limit of " + humanBytes(f.opt.maxBodyBytes)})
	}
	return nil, status.Error(codes.InvalidArgument, "could not read the request body")
}

// maxBodyHint caps the buffer a request's Content-Length makes readAll allocate
// before any byte arrived, so that a client announcing a large body and sending
// none holds little memory.
const maxBodyHint = 1 << 20

// readAll is io.ReadAll into one buffer sized from the announced length (up to
// maxBodyHint), instead of growing from 512 bytes and copying a long prompt
// over and over: into buf when it has that room.
func readAll(r io.Reader, announced int64, buf []byte) ([]byte, error) {
	if announced <= 0 {
		return io.ReadAll(r)
	}
	size := readSize(announced)
	b := buf[:0]
	if int64(cap(b)) < size {
		b = make([]byte, 0, size)
	}
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grow as append does
		}
	}
}

// readSize is the buffer readAll reads a body of the announced length into:
// up to maxBodyHint, and a byte more (EOF is seen without growing).
func readSize(announced int64) int64 { return min(announced, maxBodyHint) + 1 }

func humanBytes(n int64) string { return strconv.FormatInt(n, 10) + " bytes" }
