package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"

	"github.com/switchyard/switchyard/internal/codec"
	"github.com/switchyard/switchyard/internal/reqid"
	"github.com/switchyard/switchyard/keys"
	"github.com/switchyard/switchyard/metrics"
	"github.com/switchyard/switchyard/tracing"
	"github.com/switchyard/switchyard/usage"
)

// Metadata keys Switchyard reads and writes (REST headers map onto them).
const (
	mdRequestID      = "x-request-id"
	mdIdempotencyKey = "idempotency-key"
	mdTarget         = "x-switchyard-target"
	mdAuthorization  = "authorization"
)

// interceptors builds the chain every call passes, gRPC and REST alike: its
// stages (see run) around the handler. The gRPC servers install it, and the REST
// surface runs the very same functions for its in-process calls.
func interceptors(c chain) (grpc.UnaryServerInterceptor, grpc.StreamServerInterceptor) {
	log := c.log
	unary := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
		defer recoverInto(log, info.FullMethod, &err) // a panic in the stages themselves
		err = c.run(ctx, serverCall{method: info.FullMethod, req: req}, func(ctx context.Context) error {
			resp, err = h(ctx, req)
			return err
		})
		return resp, err
	}
	stream := func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
		defer recoverInto(log, info.FullMethod, &err)
		return c.run(ss.Context(), serverCall{method: info.FullMethod}, func(ctx context.Context) error {
			return h(srv, &ctxStream{ServerStream: ss, ctx: ctx}) // its first RecvMsg runs the model step
		})
	}
	return unary, stream
}

// chain is what every call passes through, unary or streaming.
type chain struct {
	log    *slog.Logger
	m      *metrics.Metrics
	tracer trace.Tracer
	// adm is the admission stage: auth → key → limits.
	adm *admissionStage
	// drain ends calls still running at the drain deadline with shuttingDown.
	drain *drainer
	// ledger records each inference call's usage (nil: none); virtual tells
	// virtual model names.
	ledger  *usage.Ledger
	virtual func(string) bool
}

// serverCall is what the stages know of a call: its method and, for a unary
// call, its decoded request (a stream's is decoded by the handler).
type serverCall struct {
	method string
	req    any
}

// run passes a call through the chain's stages, in order, then the handler:
//
//	observe:   request id, server span and report; the call's end (its log line,
//	           metrics, usage record), a recovered panic's too (Internal).
//	admission: auth → key → limits (admission_stage.go).
//	drain:     the drain deadline can end the handler (shuttingDown).
func (c chain) run(ctx context.Context, call serverCall, handler func(context.Context) error) error {
	return c.observe(ctx, call, func(ctx context.Context) error {
		return c.admission(ctx, call, func(ctx context.Context) error {
			return c.drainStage(ctx, handler)
		})
	})
}

// observe is the first stage: it names the call (request id), traces it,
// starts its report, and at its end — answer, error or panic, which it
// recovers into Internal — logs, measures and records it.
func (c chain) observe(ctx context.Context, call serverCall, next func(context.Context) error) (err error) {
	ctx = withRequestID(ctx)
	ctx, span := startServerSpan(ctx, c.tracer, call.method)
	defer span.End()
	ctx, rep := newReport(ctx)
	rep.attach(c.ledger, c.virtual)
	c.m.InFlight(rep.surface, 1)
	defer c.m.InFlight(rep.surface, -1)
	defer func() {
		if r := recover(); r != nil {
			err = recovered(c.log, call.method, r)
		}
		rep.finish(ctx, c.log, c.m, call.method, err)
		rep.annotate(span, err)
	}()
	return next(ctx)
}

// admission is the admission stage (admission_stage.go): the caller's key is
// checked; a unary call's model is admitted here (a stream's at its first
// RecvMsg, see ctxStream); what it was granted is released when the call ends,
// with the tokens the answer reported.
func (c chain) admission(ctx context.Context, call serverCall, next func(context.Context) error) (err error) {
	ctx, adm, err := c.adm.enter(ctx, call.method)
	rep := reportOf(ctx)
	rep.caller, rep.adm = callerOf(ctx), adm
	if adm.key != nil {
		rep.key = adm.key.ID
	}
	if err != nil {
		return err
	}
	defer func() {
		rep.trustUsage()
		if r := recover(); r != nil { // a panic too releases its slot, counted as the Internal it is answered with
			adm.end(ctx, rep.tokensIn+rep.tokensOut, rep.usage.ttft > 0, status.Error(codes.Internal, "internal error"))
			panic(r)
		}
		adm.end(ctx, rep.tokensIn+rep.tokensOut, rep.usage.ttft > 0, err)
	}()
	if call.req != nil {
		if err := admitRequest(ctx, call.req); err != nil {
			return err
		}
	}
	return next(ctx)
}

// drainStage tracks the call for the drain deadline, which ends it with
// shuttingDown.
func (c chain) drainStage(ctx context.Context, next func(context.Context) error) error {
	hctx, done := c.drain.track(ctx)
	defer done() // a panic too ends its tracking
	err := next(hctx)
	if drained(hctx, err) {
		return shuttingDown()
	}
	return err
}

// startServerSpan starts the request's server span, continuing the caller's trace
// (traceparent in gRPC metadata or the REST headers).
func startServerSpan(ctx context.Context, tracer trace.Tracer, method string) (context.Context, trace.Span) {
	ctx = tracing.Propagator.Extract(ctx, tracing.IncomingCarrier{Ctx: ctx})
	return tracer.Start(ctx, strings.TrimPrefix(method, "/"), trace.WithSpanKind(trace.SpanKindServer))
}

type ctxStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *ctxStream) Context() context.Context { return s.ctx }

// RecvMsg decodes the request of a gRPC stream and runs the admission stage's
// model steps on it (see admission_stage.go).
func (s *ctxStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if c, ok := m.(*codec.Capture); ok { // decodeErrorsAsInvalidArgument's wrapper
		if c.Err != nil {
			return nil // the wrapper reports it
		}
		m = c.Msg
	}
	return admitRequest(s.ctx, m)
}

func recoverInto(log *slog.Logger, method string, err *error) {
	if r := recover(); r != nil {
		*err = recovered(log, method, r)
	}
}

// recovered logs a recovered panic, its stack and value (the value as text: a
// panic carried from another goroutine says where it was raised), and returns
// what the caller is answered: Internal, saying nothing of it.
func recovered(log *slog.Logger, method string, r any) error {
	if log == nil {
		log = slog.Default()
	}
	log.Error("panic in handler", "method", method, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	return status.Error(codes.Internal, "internal error")
}

type requestIDKey struct{}

// withRequestID takes the caller's x-request-id (REST: X-Request-Id) or makes one,
// and echoes it in the response headers.
func withRequestID(ctx context.Context) context.Context {
	id := incomingRequestID(ctx)
	_ = grpc.SetHeader(ctx, metadata.Pairs(mdRequestID, id))
	return context.WithValue(ctx, requestIDKey{}, id)
}

// incomingRequestID is the client's x-request-id, or a new one when it sent none
// (or one past 128 bytes).
func incomingRequestID(ctx context.Context) string {
	id := firstMD(ctx, mdRequestID)
	if id == "" || len(id) > 128 {
		id = reqid.New(time.Now())
	}
	return id
}

func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// firstMD reads one incoming metadata key without copying the whole metadata.
func firstMD(ctx context.Context, key string) string {
	if v := metadata.ValueFromIncomingContext(ctx, key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// Keys are the bearer tokens calls must carry. An empty key means no check.
type Keys struct {
	// Master is required on inference calls.
	Master string
	// Admin is required on admin calls.
	Admin string
}

type authorizer struct {
	keys Keys
	// virtual are the virtual keys (nil: none), accepted on inference calls.
	virtual *keys.Registry
}

type callerKey struct{}

// callerOf names who made the call, for audit logs: a key id, never the key.
func callerOf(ctx context.Context) string {
	if c, ok := ctx.Value(callerKey{}).(string); ok {
		return c
	}
	return "anonymous"
}

// keyID is a short, non-reversible name for a key.
func keyID(kind, key string) string {
	sum := sha256.Sum256([]byte(key))
	return kind + ":" + hex.EncodeToString(sum[:4])
}

func equal(a, b string) bool {
	return b != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// check enforces the keys (see identify) on a call's authorization metadata and
// names the caller in the returned context.
func (a authorizer) check(ctx context.Context, method string) (context.Context, *keys.Key, error) {
	caller, key, err := "", (*keys.Key)(nil), error(nil)
	if t, ok := ctx.Value(tappedKey{}).(tapped); ok && t.method == method {
		caller, key = t.caller, t.key // keyTap identified it as its headers came
	} else {
		caller, key, err = a.identify(method, firstMD(ctx, mdAuthorization))
	}
	if caller != "" {
		ctx = context.WithValue(ctx, callerKey{}, caller)
	}
	return ctx, key, err
}

// verify is identify without the key: the REST front's check before the body.
func (a authorizer) verify(method, authorization string) (string, error) {
	caller, _, err := a.identify(method, authorization)
	return caller, err
}

// identify enforces the keys on an Authorization value ("Bearer <key>", the
// scheme in any case, RFC 7235 §2.1) and returns the caller's key id, and the
// virtual key when it is one. It is the one check of both surfaces: the
// interceptor chain runs it on metadata, the REST front on the header before
// reading a body. Inference needs the master key or a virtual key, admin the
// admin key; the master key never grants admin, nor does a virtual key, and the
// admin key grants inference only if it is also the master key. Missing or wrong
// keys are Unauthenticated (a revoked or expired virtual key too, saying so); a
// valid key on the wrong service is PermissionDenied. Health and reflection need
// none. A virtual key is recognised (and its limits apply) even when no master
// key is set, and a key in a virtual key's form that no key has is refused then too.
func (a authorizer) identify(method, authorization string) (string, *keys.Key, error) {
	var want, other, kind string
	switch {
	case strings.HasPrefix(method, "/switchyard.v1."):
		want, other, kind = a.keys.Master, a.keys.Admin, "master"
	case strings.HasPrefix(method, "/switchyard.admin.v1."):
		want, other, kind = a.keys.Admin, a.keys.Master, "admin"
	default:
		return "", nil, nil
	}
	got, ok := bearer(authorization)
	if ok && equal(got, want) {
		return keyID(kind, got), nil, nil
	}
	if ok && a.virtual != nil && strings.HasPrefix(got, keys.SecretPrefix) {
		k, err := a.virtual.Authenticate(got)
		switch {
		case errors.Is(err, keys.ErrRevoked):
			return "", nil, unauthenticated("This API key has been revoked.")
		case errors.Is(err, keys.ErrExpired):
			return "", nil, unauthenticated("This API key has expired.")
		case err == nil && kind == "admin":
			return "", nil, permissionDenied("This key is valid but not allowed to call the admin API.")
		case err == nil:
			return k.ID, k, nil
		}
	}
	if want == "" {
		if ok && a.virtual != nil && strings.HasPrefix(got, keys.SecretPrefix) && !equal(got, other) {
			// Served without a key, but a virtual key Switchyard does not know (a
			// typo, a key of another gateway) is refused as a revoked one is, not
			// served with no key's limits and allowlist.
			return "", nil, unauthenticated("Incorrect API key provided: Switchyard has no such virtual key.")
		}
		return "", nil, nil
	}
	switch {
	case !ok || got == "":
		return "", nil, unauthenticated("You didn't provide an API key. Send it as 'Authorization: Bearer <key>'.")
	case equal(got, other):
		return "", nil, permissionDenied("This key is valid but not allowed to call the " + serviceName(kind) + " API.")
	}
	return "", nil, unauthenticated("Incorrect API key provided.")
}

// unauthenticated and permissionDenied are the refusals of a key, with the
// ErrorInfo every Switchyard error carries (http_status, type, code), as REST
// answers them: a gRPC client reads HTTPStatus and the code alike.
func unauthenticated(msg string) error {
	return statusOf(apiError{httpStatus: http.StatusUnauthorized, errType: typeForStatus(http.StatusUnauthorized),
		code: "invalid_api_key", message: msg})
}

func permissionDenied(msg string) error {
	return statusOf(apiError{httpStatus: http.StatusForbidden, errType: typeForStatus(http.StatusForbidden), message: msg})
}

// bearer reads the token of a Bearer credential; the scheme is case-insensitive
// and may be followed by more than one space.
func bearer(authorization string) (string, bool) {
	scheme, token, ok := strings.Cut(authorization, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimLeft(token, " "), true
}

func serviceName(kind string) string {
	if kind == "admin" {
		return "admin"
	}
	return "inference"
}

// tapped is who keyTap found a call's key to be, for its admission stage.
type tapped struct {
	method, caller string
	key            *keys.Key
}

type tappedKey struct{}

// tapDeadline is the farthest client deadline keyTap refuses a call with.
const tapDeadline = time.Minute

// keyTap refuses a call whose key is missing or wrong as its headers arrive,
// before grpc-go gives it a stream, a goroutine and room for its message (the
// interceptor chain would refuse it only once the message came: a client with no
// key held 2.7 GB with 40,000 streams on 40 connections, their headers inflated by
// HPACK). The refusal is observed as the chain observes one (request line,
// metrics, span); a call with a good key goes on, and the chain's admission
// stage takes who it is from the tap's context instead of identifying it again.
// The public gRPC server only: the in-process connection carries REST calls the
// front has checked.
func (c chain) keyTap() tap.ServerInHandle {
	return func(ctx context.Context, info *tap.Info) (context.Context, error) {
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) > tapDeadline {
			// grpc-go (1.85) leaves the timer of a stream its tap refused running
			// to the client's deadline (grpc-timeout, up to years): such a call goes
			// to the chain, which refuses it too, as before the tap.
			return ctx, nil
		}
		var authorization string
		if v := info.Header.Get(mdAuthorization); len(v) > 0 {
			authorization = v[0]
		}
		caller, key, err := c.adm.auth.identify(info.FullMethodName, authorization)
		if err == nil {
			// The chain's admission stage takes this, instead of identifying again.
			return context.WithValue(ctx, tappedKey{}, tapped{method: info.FullMethodName, caller: caller, key: key}), nil
		}
		// There is no stream to echo x-request-id on: the id (the client's, or
		// one made here, which the request line names too) goes in the error's
		// ErrorInfo as request_id.
		id := incomingRequestID(ctx)
		if id != firstMD(ctx, mdRequestID) { // made here: the chain's observe reads it back
			md, _ := metadata.FromIncomingContext(ctx)
			md = md.Copy()
			md.Set(mdRequestID, id) // in place of one past 128 bytes, which observe would replace again
			ctx = metadata.NewIncomingContext(ctx, md)
		}
		err = c.observe(ctx, serverCall{method: info.FullMethodName}, func(context.Context) error { return err })
		return ctx, withRequestIDDetail(err, id)
	}
}

// refuse observes a call the REST front refused before the chain (its body too
// large, too slow, unreadable, or not a request) as the chain observes any
// call's end: request line, metrics, span; its caller and key as its
// authorization names them (the front checked it). It returns err.
func (c chain) refuse(ctx context.Context, method string, err error) error {
	return c.observe(ctx, serverCall{method: method}, func(ctx context.Context) error {
		if caller, key, aerr := c.adm.auth.identify(method, firstMD(ctx, mdAuthorization)); aerr == nil {
			rep := reportOf(ctx)
			rep.caller = caller
			if key != nil {
				rep.key = key.ID
			}
		}
		return err
	})
}

// withRequestIDDetail is err with request_id in its ErrorInfo's metadata.
func withRequestIDDetail(err error, id string) error {
	st := status.Convert(err)
	p := st.Proto()
	for _, d := range p.GetDetails() {
		var info errdetails.ErrorInfo
		if d.UnmarshalTo(&info) != nil || info.GetDomain() != errorDomain {
			continue
		}
		if info.Metadata == nil {
			info.Metadata = map[string]string{}
		}
		info.Metadata["request_id"] = id
		if d.MarshalFrom(&info) != nil {
			return err
		}
		return status.ErrorProto(p)
	}
	return err
}
