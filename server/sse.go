package server

import (
	"errors"
	"io"
	"net/http"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/openaijson"
)

// stream serves a streaming chat completion as Server-Sent Events, exactly as
// OpenAI frames it: "data: {chunk}\n\n" per event, flushed, and "data: [DONE]\n\n"
// after a complete stream. Headers wait for the first chunk, so a failure before it
// is a plain JSON error with its status; a failure after it is one in-band
// "data: {"error":…}" event and no [DONE].
func (f *front) stream(w http.ResponseWriter, r *http.Request, req *pb.ChatCompletionRequest) {
	ctx, err := runtime.AnnotateContext(r.Context(), f.mux, r, pb.ChatService_StreamChatCompletion_FullMethodName,
		runtime.WithHTTPPathPattern("/v1/chat/completions"))
	if err != nil {
		writeError(w, err)
		return
	}
	st, err := f.chat.StreamChatCompletion(ctx, req)
	if err != nil {
		writeError(w, err)
		return
	}
	chunk, err := st.Recv()
	header, _ := st.Header()
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = statusOf(apiError{httpStatus: http.StatusBadGateway, errType: "server_error", code: "empty_response",
				message: "provider returned an empty stream"})
		}
		copyHeaders(w, header)
		writeError(w, err)
		return
	}
	copyHeaders(w, header)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	buf := make([]byte, 0, 1024)
	for {
		buf = append(buf[:0], "data: "...)
		buf = openaijson.Append(buf, chunk)
		buf = append(buf, "\n\n"...)
		if _, err := w.Write(buf); err != nil {
			return // the client went away; its context cancels the upstream
		}
		_ = rc.Flush()
		chunk, err = st.Recv()
		if errors.Is(err, io.EOF) {
			_, _ = io.WriteString(w, "data: [DONE]\n\n")
			_ = rc.Flush()
			return
		}
		if err != nil {
			if r.Context().Err() != nil {
				return
			}
			e := fromStatus(status.Convert(err))
			if e.Code == "" {
				e.Code = "stream_incomplete"
			}
			buf = append(buf[:0], "data: "...)
			buf = appendErrorJSON(buf, e)
			buf = append(buf, "\n\n"...)
			_, _ = w.Write(buf)
			_ = rc.Flush()
			return
		}
	}
}

// copyHeaders sets the response headers Switchyard owns from gRPC header metadata.
func copyHeaders(w http.ResponseWriter, md metadata.MD) {
	for key, vals := range md {
		if name, ok := outgoingHeader(key); ok && len(vals) > 0 {
			w.Header().Set(name, vals[0])
		}
	}
}
