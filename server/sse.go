package server

import (
	"context"
	"io"
	"net/http"
	"net/textproto"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/openaijson"
)

// sseStream is the grpc.ServerStream of an in-process streaming call: each message
// the handler sends is written as one Server-Sent Event, exactly as OpenAI frames
// it ("data: {chunk}\n\n"), and flushed. Headers wait for the first chunk.
type sseStream struct {
	ctx context.Context
	// more says another chunk is already at hand: skip this flush, the next write
	// flushes the burst. The handler sets it before each send.
	more    bool
	sink    *headerSink
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
	buf     []byte
}

// newSSEStream writes events to w (each write bounded by the front's
// boundedWriter, as every REST write is).
func newSSEStream(w http.ResponseWriter, sink *headerSink) *sseStream {
	return &sseStream{sink: sink, w: w, rc: http.NewResponseController(w), buf: make([]byte, 0, 1024)}
}

func (s *sseStream) Context() context.Context        { return s.ctx }
func (s *sseStream) SetHeader(md metadata.MD) error  { return s.sink.SetHeader(md) }
func (s *sseStream) SendHeader(md metadata.MD) error { return s.sink.SetHeader(md) }
func (s *sseStream) SetTrailer(metadata.MD)          {}
func (s *sseStream) RecvMsg(any) error               { return io.EOF }

// SendMsg writes one chunk as an event.
func (s *sseStream) SendMsg(m any) error {
	s.start()
	s.buf = append(s.buf[:0], "data: "...)
	s.buf = openaijson.Append(s.buf, m.(*pb.ChatCompletionChunk))
	return s.write()
}

// SendRaw writes a chunk exactly as the upstream sent it (the pass-through for
// chunks that need no change).
func (s *sseStream) SendRaw(raw []byte) error {
	s.start()
	s.buf = append(append(s.buf[:0], "data: "...), raw...)
	return s.write()
}

// start writes the response headers before the first event.
func (s *sseStream) start() {
	if !s.started {
		s.started = true
		copyHeaders(s.w, s.sink)
		h := s.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		s.w.WriteHeader(http.StatusOK)
	}
}

// write ends the event in buf and writes it, flushing unless more is at hand.
// A write that fails is the client's leaving (Canceled, a 499 in the ledger),
// not a server error.
func (s *sseStream) write() error {
	s.buf = append(s.buf, "\n\n"...)
	if _, err := s.w.Write(s.buf); err != nil {
		return clientGone(err)
	}
	if s.more {
		return nil // the next chunk is already at hand: flush once for the burst
	}
	if err := s.rc.Flush(); err != nil {
		return clientGone(err)
	}
	return nil
}

// clientGone is the error of a write to a client that no longer reads: it
// left (a broken pipe, a reset) or stopped reading past the write timeout.
func clientGone(err error) error {
	return status.Error(codes.Canceled, "the client stopped reading the stream: "+err.Error())
}

type sseKey struct{}

// sseFrom returns the REST SSE writer serving this call, if any: a burst of
// chunks is flushed once while a chunk that arrives alone is flushed at once, and
// chunks that need no change are relayed as the upstream sent them.
func sseFrom(ctx context.Context) *sseStream {
	s, _ := ctx.Value(sseKey{}).(*sseStream)
	return s
}

// stream serves a streaming chat completion as Server-Sent Events. A failure before
// the first chunk is a plain JSON error with its status; a failure after it is one
// in-band "data: {"error":…}" event and no [DONE]; a complete stream ends with
// "data: [DONE]". False when the method panicked (the chain recovered it): a
// buffer the request lies in stays lent.
func (f *front) stream(w http.ResponseWriter, r *http.Request, req *pb.ChatCompletionRequest) (settled bool) {
	var method settling
	defer func() { settled = method.settled() }()
	sink := &headerSink{method: pb.ChatService_StreamChatCompletion_FullMethodName}
	ss := newSSEStream(w, sink)
	ss.ctx = context.WithValue(grpc.NewContextWithServerTransportStream(incomingContext(r), sink), sseKey{}, ss)
	info := &grpc.StreamServerInfo{FullMethod: sink.method, IsServerStream: true}
	err := f.in.stream(f.in.chat, ss, info, func(_ any, stream grpc.ServerStream) error {
		if err := admitRequest(stream.Context(), req); err != nil { // decoded by the front, not by RecvMsg
			return err
		}
		var err error
		method.run(func() {
			err = f.in.chat.StreamChatCompletion(req,
				&grpc.GenericServerStream[pb.ChatCompletionRequest, pb.ChatCompletionChunk]{ServerStream: stream})
		})
		return err
	})
	if !ss.started {
		copyHeaders(w, sink)
		if err == nil {
			err = statusOf(apiError{httpStatus: http.StatusBadGateway, errType: "server_error", code: "empty_response",
				message: "provider returned an empty stream"})
		}
		writeError(w, err)
		return
	}
	if err == nil {
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
		_ = ss.rc.Flush()
		return
	}
	if r.Context().Err() != nil {
		return // the client went away
	}
	e := fromStatus(status.Convert(err))
	if e.Code == codeShuttingDown { // ended by the drain deadline
		e = openAIError{Message: "Switchyard is shutting down; the stream ended before its final event",
			Type: "server_error", Code: "stream_incomplete"}
	}
	if e.Code == "" {
		e.Code = "stream_incomplete"
	}
	buf := append(ss.buf[:0], "data: "...)
	buf = appendErrorJSON(buf, e)
	buf = append(buf, "\n\n"...)
	_, _ = w.Write(buf)
	_ = ss.rc.Flush()
	return // settled, by the deferred call
}

// copyHeaders sets the response headers Switchyard owns from the gRPC header
// metadata the sink took; a key's first value wins, as in metadata joined:
// the metadata are read last first, each overwriting what later ones set.
func copyHeaders(w http.ResponseWriter, sink *headerSink) {
	h := w.Header()
	for i := len(sink.more); i >= 0; i-- {
		for key, vals := range sink.md(i) {
			if name, ok := outgoingHeader(key); ok && len(vals) > 0 {
				// The value's own slice, capped so that a later Add copies: no
				// allocation per header (CanonicalMIMEHeaderKey returns canonical
				// names as they are).
				h[textproto.CanonicalMIMEHeaderKey(name)] = vals[:1:1]
			}
		}
	}
}
