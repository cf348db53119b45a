package server

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/switchyard/switchyard/internal/codec"
)

// clientsFault registers desc's methods so that a request message the codec could
// not decode is the caller's error (InvalidArgument, with the codec's reason, e.g.
// the nesting limit), not an Internal error of the server's. grpc-go reports any
// codec failure as Internal and writes that status itself, before a handler or
// interceptor could change it; so the message is received into a codec.Capture,
// which keeps the decode error for the handler instead of failing the receive.
func clientsFault(desc *grpc.ServiceDesc) *grpc.ServiceDesc {
	out := *desc
	out.Methods = make([]grpc.MethodDesc, len(desc.Methods))
	for i, m := range desc.Methods {
		handler := m.Handler
		m.Handler = func(srv any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
			return handler(srv, ctx, func(v any) error { return receive(dec, v) }, ic)
		}
		out.Methods[i] = m
	}
	out.Streams = make([]grpc.StreamDesc, len(desc.Streams))
	for i, s := range desc.Streams {
		handler := s.Handler
		s.Handler = func(srv any, stream grpc.ServerStream) error { return handler(srv, decodingStream{stream}) }
		out.Streams[i] = s
	}
	return &out
}

// decodingStream is a server stream whose messages are received as above.
type decodingStream struct{ grpc.ServerStream }

func (s decodingStream) RecvMsg(m any) error { return receive(s.ServerStream.RecvMsg, m) }

// receive decodes one request message into v; bytes that do not decode are
// InvalidArgument. Receive errors (cancellation, a message over the size limit)
// stay as they are.
func receive(recv func(any) error, v any) error {
	c := &codec.Capture{Msg: v}
	if err := recv(c); err != nil {
		return err
	}
	if c.Err != nil {
		return status.Error(codes.InvalidArgument, "the request message could not be decoded: "+c.Err.Error())
	}
	return nil
}
