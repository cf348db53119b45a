package server

import (
	"context"
	"net/http"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/openaijson"
	"github.com/switchyard/switchyard/providers"
)

// inProcess runs REST chat calls through the same interceptor chain and handlers as
// gRPC calls, in process: no serialisation, no transport. The load harness measured
// it against the in-memory gRPC connection (see README, Performance).
type inProcess struct {
	unary  grpc.UnaryServerInterceptor
	stream grpc.StreamServerInterceptor
	// refuse observes a call refused before the chain (chain.refuse).
	refuse func(ctx context.Context, method string, err error) error
	chat   *chatService
	embed  *embeddingService
	pass   *passthroughService
}

// incomingContext carries the REST headers handlers read as incoming gRPC metadata,
// exactly as grpc-gateway forwards them.
func incomingContext(r *http.Request) context.Context {
	md := make(metadata.MD, 2)
	for header, key := range forwardedHeaders {
		if v := r.Header[header]; len(v) > 0 {
			md[key] = v
		}
	}
	return withSurface(metadata.NewIncomingContext(r.Context(), md), surfaceREST)
}

// headerSink is the grpc.ServerTransportStream of an in-process call: it collects the
// response metadata handlers set, which become response headers.
type headerSink struct {
	method string
	header metadata.MD
	// more holds the later SetHeader calls' metadata as they came (moreBuf
	// backs it): adding them to header cost an allocation per key on every
	// request that returns usage.
	more    []metadata.MD
	moreBuf [2]metadata.MD
}

func (h *headerSink) Method() string { return h.method }

// SetHeader adds md. The handlers' metadata is theirs to give away (made for
// this call, never changed after): each is kept as is, without the copies
// metadata.Join makes.
func (h *headerSink) SetHeader(md metadata.MD) error {
	switch {
	case h.header == nil:
		h.header = md
	case h.more == nil:
		h.more = append(h.moreBuf[:0], md)
	default:
		h.more = append(h.more, md)
	}
	return nil
}

// md is the i-th metadata taken: header, then more's.
func (h *headerSink) md(i int) metadata.MD {
	if i == 0 {
		return h.header
	}
	return h.more[i-1]
}

func (h *headerSink) SendHeader(md metadata.MD) error { return h.SetHeader(md) }

func (h *headerSink) SetTrailer(metadata.MD) error { return nil }

// unaryChat serves a non-stream chat completion (as the upstream sent it where
// its provider kept it: providers.RawAnswers); false when the method
// panicked (the chain recovered it): a buffer the request lies in stays lent.
func (f *front) unaryChat(w http.ResponseWriter, r *http.Request, req *pb.ChatCompletionRequest) bool {
	sink := &headerSink{method: pb.ChatService_CreateChatCompletion_FullMethodName}
	var raw providers.RawAnswers // the answer as the upstream sent it, when it can go as it is
	ctx := grpc.NewContextWithServerTransportStream(providers.WithRawAnswers(incomingContext(r), &raw), sink)
	info := &grpc.UnaryServerInfo{Server: f.in.chat, FullMethod: sink.method}
	var method settling
	resp, err := f.in.unary(ctx, req, info, func(ctx context.Context, req any) (resp any, err error) {
		method.run(func() { resp, err = f.in.chat.CreateChatCompletion(ctx, req.(*pb.ChatCompletionRequest)) })
		return resp, err
	})
	copyHeaders(w, sink)
	if err != nil {
		writeError(w, err)
		return method.settled()
	}
	body, ok := raw.Take(resp.(*pb.ChatCompletion))
	if !ok {
		body = openaijson.Append(make([]byte, 0, 2048), resp.(*pb.ChatCompletion))
	}
	w.Header().Set("Content-Type", "application/json")
	writeAnswer(w, body)
	return true
}
