package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/switchyard/switchyard/internal/bufpool"
	"github.com/switchyard/switchyard/internal/codec"
	"github.com/switchyard/switchyard/internal/panics"
	"github.com/switchyard/switchyard/openaijson"
)

// decodeErrorsAsInvalidArgument registers desc's methods so that a request message
// the codec could not decode is the caller's error (InvalidArgument, with the
// codec's reason, e.g. the nesting limit), not an Internal error of the server's.
// grpc-go reports any codec failure as Internal and writes that status itself, so
// the message is received into a codec.Capture, which keeps the decode error. A
// unary request is decoded before the interceptor chain runs: its decode error is
// returned from inside the chain, after authentication, so an unauthenticated
// caller learns nothing of its bytes and every refusal gets its request line.
//
// A long chat request's conversation is transcoded into a buffer bufpool lends
// (codec.Capture.Lend; a stream's first message): the call holds it, and so
// does each upstream body sending from it (bufpool.With); it is given back when
// the handler returns. Not after a panic (a unary chain recovers it inside,
// a stream's outside): a hedge's other attempt may still be reading it;
// bufpool takes it back once nothing refers to its lending (the attempt's
// context carries it). log hears a decoding panic the chain did not (nil: the
// default logger).
func decodeErrorsAsInvalidArgument(desc *grpc.ServiceDesc, log *slog.Logger) *grpc.ServiceDesc {
	out := *desc
	out.Methods = make([]grpc.MethodDesc, len(desc.Methods))
	for i, m := range desc.Methods {
		handler := m.Handler
		m.Handler = func(srv any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
			var decodeErr error // a *panics.Carried too: decoding panicked
			var ref bufpool.Ref
			var method settling
			receiveInto := func(v any) (err error) {
				// A unary request is decoded outside the chain, in a goroutine
				// grpc-go does not recover: a decoder's panic (a bug, on some
				// caller's bytes) would end the process. It is carried into the
				// chain instead, and raised there (inner), where it is recovered,
				// logged with its stack and answered Internal.
				defer func() {
					if p := recover(); p != nil {
						decodeErr, err = panics.Carry(p, "decoding a request"), nil
					}
				}()
				ref, err = receive(dec, v, true)
				if _, ok := err.(invalidMessage); ok {
					decodeErr, err = err, nil
				}
				return err
			}
			chained := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				ctx = bufpool.With(ctx, ref) // as it is for the zero Ref
				p, panicked := decodeErr.(*panics.Carried)
				if panicked {
					req = nil // half decoded: no model of it is admitted or reported
				}
				inner := func(ctx context.Context, req any) (resp any, err error) {
					if panicked {
						decodeErr = nil // raised: the chain answers for it
						panic(p)
					}
					if decodeErr != nil {
						return nil, decodeErr
					}
					method.run(func() { resp, err = h(ctx, req) })
					return resp, err
				}
				if ic == nil {
					if panicked { // no chain to recover it (never so in Switchyard)
						return nil, recovered(log, info.FullMethod, p)
					}
					return inner(ctx, req)
				}
				resp, err := ic(ctx, req, info, inner)
				if panicked && decodeErr != nil { // refused before the handler (a bad key): still logged
					_ = recovered(log, info.FullMethod, p)
				}
				return resp, err
			}
			resp, err := handler(srv, ctx, receiveInto, chained)
			if method.settled() {
				ref.Release()
			}
			return resp, err
		}
		out.Methods[i] = m
	}
	out.Streams = make([]grpc.StreamDesc, len(desc.Streams))
	for i, s := range desc.Streams {
		handler := s.Handler
		s.Handler = func(srv any, stream grpc.ServerStream) error {
			ds := &decodingStream{ServerStream: stream}
			err := handler(srv, ds)
			ds.lent.Release() // not on a panic (the interceptors recover it, outside)
			return err
		}
		out.Streams[i] = s
	}
	return &out
}

// decodingStream is a server stream whose messages are received as above, the
// first into a lent buffer when it is a long chat request: the stream's
// context then carries it (bufpool.With) for the upstream bodies to hold.
type decodingStream struct {
	grpc.ServerStream
	received bool
	lent     bufpool.Ref
	ctx      context.Context // with lent; nil until a message was lent
}

func (s *decodingStream) RecvMsg(m any) error {
	ref, err := receive(s.ServerStream.RecvMsg, m, !s.received)
	s.received = true
	if ref != (bufpool.Ref{}) {
		s.lent, s.ctx = ref, bufpool.With(s.ServerStream.Context(), ref)
	}
	return err
}

func (s *decodingStream) Context() context.Context {
	if s.ctx != nil {
		return s.ctx
	}
	return s.ServerStream.Context()
}

// receive decodes one request message into v; bytes that do not decode are an
// invalidMessage (InvalidArgument). Receive errors (cancellation, a message over the
// size limit) stay as they are. With lend, the codec may transcode a long
// conversation into a lent buffer: the caller holds the Ref returned.
func receive(recv func(any) error, v any, lend bool) (bufpool.Ref, error) {
	c := &codec.Capture{Msg: v, Lend: lend}
	if err := recv(c); err != nil {
		c.Ref.Release()
		return bufpool.Ref{}, err
	}
	if c.Err != nil {
		c.Ref.Release()
		return bufpool.Ref{}, invalidMessage{c.Err}
	}
	return c.Ref, nil
}

// decodeSafely runs a decoder on a caller's bytes where no recovery answers
// for a panic (the REST front decodes a body before the chain runs): a
// decoder's bug is then the caller's 500 with Switchyard's error body, logged
// with its stack, not a reset connection.
func decodeSafely(log *slog.Logger, what string, decode func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = recovered(log, what, r)
		}
	}()
	return decode()
}

// invalidMessage is a request message that did not decode.
type invalidMessage struct{ err error }

func (e invalidMessage) Error() string {
	return "the request message could not be decoded: " + e.err.Error()
}

// GRPCStatus makes it InvalidArgument, naming the member (param) when the
// codec named one (a NaN in a double: openaijson.Error).
func (e invalidMessage) GRPCStatus() *status.Status {
	var oe *openaijson.Error
	if errors.As(e.err, &oe) && oe.Param != "" {
		return status.Convert(statusOf(apiError{httpStatus: http.StatusBadRequest, message: e.Error(),
			errType: "invalid_request_error", param: oe.Param}))
	}
	return status.New(codes.InvalidArgument, e.Error())
}
