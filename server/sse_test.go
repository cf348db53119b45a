package server

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/openaijson"
)

// discard is a ResponseWriter that keeps the last write and supports what
// http.ResponseController asks of it (flush, write deadline).
type discard struct {
	h       http.Header
	last    []byte
	flushes int
}

func (d *discard) Header() http.Header              { return d.h }
func (d *discard) Write(b []byte) (int, error)      { d.last = b; return len(b), nil }
func (d *discard) WriteHeader(int)                  {}
func (d *discard) Flush()                           { d.flushes++ }
func (d *discard) SetWriteDeadline(time.Time) error { return nil }

const rawChunk = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1769092764,"model":"gpt-4o",` +
	`"service_tier":"default","system_fingerprint":"fp_29330a9688","choices":[{"index":0,` +
	`"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}]}`

func newSSE(w *discard) *sseStream {
	s := newSSEStream(w, &headerSink{})
	s.ctx = context.Background()
	return s
}

// Each chunk is one event, framed as OpenAI frames it, and flushed unless the next
// one is already at hand.
func TestSSEFraming(t *testing.T) {
	w := &discard{h: http.Header{}}
	s := newSSE(w)
	require.NoError(t, s.SendRaw([]byte(rawChunk)))
	require.Equal(t, "data: "+rawChunk+"\n\n", string(w.last))
	require.Equal(t, "text/event-stream", w.h.Get("Content-Type"))
	require.Equal(t, 1, w.flushes)

	chunk := &pb.ChatCompletionChunk{}
	require.NoError(t, openaijson.UnmarshalChunk([]byte(rawChunk), chunk))
	s.more = true
	require.NoError(t, s.SendMsg(chunk))
	payload, ok := strings.CutPrefix(string(w.last), "data: ")
	require.True(t, ok)
	payload, ok = strings.CutSuffix(payload, "\n\n")
	require.True(t, ok)
	require.NotContains(t, payload, "\n")
	sent := &pb.ChatCompletionChunk{}
	require.NoError(t, openaijson.UnmarshalChunk([]byte(payload), sent))
	require.True(t, proto.Equal(chunk, sent), "the event carries the chunk")
	require.Equal(t, 1, w.flushes, "not flushed: the next event is at hand")
	s.more = false
	require.NoError(t, s.SendRaw([]byte(rawChunk)))
	require.Equal(t, 2, w.flushes, "a burst is flushed once, by its last event")
}

// TestSSEAllocations holds the per-chunk framing to zero allocations of its own once
// its buffer has grown (a regression fails CI without timing anything).
func TestSSEAllocations(t *testing.T) {
	w := &discard{h: http.Header{}}
	s := newSSE(w)
	raw := []byte(rawChunk)
	require.Zero(t, testing.AllocsPerRun(200, func() { _ = s.SendRaw(raw) }))
	chunk := &pb.ChatCompletionChunk{}
	require.NoError(t, openaijson.UnmarshalChunk(raw, chunk))
	require.LessOrEqual(t, testing.AllocsPerRun(200, func() { _ = s.SendMsg(chunk) }), 3.0) // the encoder's own
}

// BenchmarkSSEFraming is one chunk's framing and write: relayed as the upstream
// sent it, and encoded from a proto (chunks that needed a change, gRPC-shaped).
func BenchmarkSSEFraming(b *testing.B) {
	chunk := &pb.ChatCompletionChunk{}
	require.NoError(b, openaijson.UnmarshalChunk([]byte(rawChunk), chunk))
	raw := []byte(rawChunk)
	b.Run("raw", func(b *testing.B) {
		s := newSSE(&discard{h: http.Header{}})
		b.ReportAllocs()
		for b.Loop() {
			_ = s.SendRaw(raw)
		}
	})
	b.Run("encoded", func(b *testing.B) {
		s := newSSE(&discard{h: http.Header{}})
		b.ReportAllocs()
		for b.Loop() {
			_ = s.SendMsg(chunk)
		}
	})
}
