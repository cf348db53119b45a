package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/openaijson"
	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/providers/sse"
)

var doneMarker = []byte("[DONE]")

// Stream sends a streaming chat completion and waits for its first event that
// carries content; events before it (a role-only chunk) are held and delivered
// first by Recv and NextRaw.
func (c *Client) Stream(ctx context.Context, req *providers.Request) (providers.Stream, error) {
	conn, deadline, err := sse.Open(ctx, sse.Request{
		New: func(ctx context.Context) (*http.Request, error) {
			return c.newRequest(ctx, http.MethodPost, c.endpoint(req.Model, "chat/completions"), c.upstreamBody(req, true), req)
		},
		Do: c.http.Do, TransportError: c.transportError, StatusError: c.parseError, JSONAnswer: c.jsonAnswer,
		FirstToken: c.cfg.FirstTokenTimeout,
	})
	if err != nil {
		return nil, err
	}
	s := newStream(c, conn, req.Model, int(max(1, req.Body.GetN())))
	if err := conn.Started(deadline, s.readFirst(), c.timeouts(), c.cfg.StreamIdleTimeout); err != nil {
		return nil, err
	}
	return s, nil
}

// errNotAStream is a 200 to a stream request that is JSON, not events.
var errNotAStream = errors.New("Content-Type application/json, not text/event-stream")

// jsonAnswer reads a 200 JSON answer to a stream request as Chat reads a 200
// body: an error hidden in it keeps its status (a 429 stays retryable and
// failover-eligible); anything else, a completion included, is unreadable.
func (c *Client) jsonAnswer(body []byte) error {
	if e := c.hiddenError(body); e != nil {
		return e
	}
	return c.unreadable("answered JSON to a stream request", errNotAStream)
}

// newStream reads conn as a stream of n choices of model.
func newStream(c *Client, conn *sse.Conn, model string, n int) *stream {
	conn.Provider, conn.Secrets = c.name, providers.Secrets(c.secrets)
	return &stream{c: c, conn: conn, model: model, choices: n}
}

// timeouts are the bounds transport errors name.
func (c *Client) timeouts() providers.Timeouts {
	return providers.Timeouts{Attempt: c.cfg.Timeout, FirstToken: c.cfg.FirstTokenTimeout}
}

type stream struct {
	c     *Client
	conn  *sse.Conn
	model string

	// held are the events read while waiting for the first content (role-only
	// chunks, then the first with content), delivered before any further read.
	held []heldChunk
	// choices is how many choices the request asked for (n); with more than one,
	// ended records which have carried a finish_reason (by index).
	choices  int
	ended    map[int32]bool
	finished bool // every choice carried finish_reason

	// chunks decodes the events in order: a chunk whose envelope (id, model,
	// ...) repeats the one before's takes its values without reading them.
	chunks openaijson.ChunkReader
}

// heldChunk is an event read before the stream was handed on: as sent, what
// inspecting it found, and decoded when it had to be (see settle); Recv
// decodes the others.
type heldChunk struct {
	chunk *pb.ChatCompletionChunk
	raw   []byte
	info  openaijson.ChunkInfo
}

// readFirst reads up to the first event that carries content (see providers.HasContent),
// holding every event before it. Errors here are plain errors with a status: no
// byte has reached the client, so the attempt can be retried. A stream that ends
// with nothing but role-only chunks is an empty stream.
func (s *stream) readFirst() error {
	for {
		ev, err := s.conn.First(s.c.timeouts())
		if err != nil {
			return err
		}
		data := ev.Data
		if bytes.Equal(data, doneMarker) {
			return sse.Empty(s.c.name)
		}
		if e := s.c.hiddenError(data); e != nil {
			return e
		}
		info, err := openaijson.InspectChunk(data) // UnmarshalChunk's verdict, without decoding
		if err != nil {
			return s.c.unreadable("sent an unreadable stream event", err)
		}
		chunk, err := s.settle(data, info)
		if err != nil {
			return s.c.unreadable("sent an unreadable stream event", err)
		}
		s.held = append(s.held, heldChunk{chunk: chunk, raw: append([]byte(nil), data...), info: info})
		if info.Content || len(s.held) >= sse.MaxHeld { // info.Content: providers.HasContent
			return nil
		}
	}
}

// settle notes what an inspected chunk says of the choices' finish, decoding
// it only when it must: it needs normalising to be relayed (returned then), or
// which choices finished needs its indexes.
func (s *stream) settle(data []byte, info openaijson.ChunkInfo) (*pb.ChatCompletionChunk, error) {
	switch {
	case !info.Complete:
		return s.decode(data)
	case s.choices > 1 || s.ended != nil || !loneChoiceZero(info.Choices, info.NonZeroIndex):
		// Several choices (asked for or sent): which ones finished needs the
		// chunk's indexes, as track reads them for Recv.
		_, err := s.decode(data)
		return nil, err
	case info.Finished:
		s.finished = true
	}
	return nil, nil
}

func (s *stream) decode(data []byte) (*pb.ChatCompletionChunk, error) {
	chunk := &pb.ChatCompletionChunk{}
	if err := s.chunks.Next(data, chunk); err != nil {
		return nil, err
	}
	if chunk.Object == "" {
		chunk.Object = "chat.completion.chunk"
	}
	if chunk.Model == "" {
		chunk.Model = s.model
	}
	s.track(chunk)
	return chunk, nil
}

// track notes the choices chunk finishes. A stream is complete only when every
// choice has its finish_reason: each of the n asked for, and any other index the
// upstream sent.
func (s *stream) track(chunk *pb.ChatCompletionChunk) {
	nonZero := len(chunk.Choices) == 1 && chunk.Choices[0].Index != 0
	if s.choices == 1 && s.ended == nil && loneChoiceZero(len(chunk.Choices), nonZero) {
		for _, ch := range chunk.Choices { // the common case: choice 0 alone
			s.finished = s.finished || ch.GetFinishReason() != ""
		}
		return
	}
	if s.ended == nil {
		s.ended = map[int32]bool{0: s.finished} // s.finished so far: choice 0's alone
	}
	for _, ch := range chunk.Choices {
		s.ended[ch.Index] = s.ended[ch.Index] || ch.GetFinishReason() != ""
	}
	s.finished = true
	for _, done := range s.ended {
		s.finished = s.finished && done
	}
	for i := range int32(s.choices) {
		s.finished = s.finished && s.ended[i]
	}
}

// loneChoiceZero reports whether a chunk with n choices, nonZero when one has an
// index other than 0, has at most choice 0: the only chunk whose finish_reason
// alone says whether a stream of one choice is complete. Recv (track) and NextRaw
// both ask it, so the two give one verdict.
func loneChoiceZero(n int, nonZero bool) bool { return n <= 1 && !nonZero }

// malformed ends the stream on a chunk that does not decode: the chunk is never
// passed on, in part or whole.
func (s *stream) malformed(err error) error {
	if s.finished { // after the answer is whole: it stays complete
		s.conn.End()
		return io.EOF
	}
	return s.conn.Incomplete(providers.StreamMalformedChunk, fmt.Sprintf("the provider sent an unreadable chunk: %v", err))
}

// Recv returns the next chunk, io.EOF after the final event.
func (s *stream) Recv() (*pb.ChatCompletionChunk, error) {
	if len(s.held) > 0 {
		h := s.held[0]
		s.held = s.held[1:]
		if h.chunk != nil {
			return h.chunk, nil
		}
		return s.decode(h.raw) // inspected already: it decodes
	}
	data, err := s.nextEvent()
	if err != nil {
		return nil, err
	}
	chunk, err := s.decode(data)
	if err != nil {
		return nil, s.malformed(err)
	}
	return chunk, nil
}

// NextRaw returns the next chunk as the upstream sent it, with what a relay needs
// to know of it; a chunk that cannot be relayed as is comes decoded and
// normalised. Chunks after the first are checked, not decoded, when they have
// every member OpenAI always sends. It ends like Recv.
func (s *stream) NextRaw() (providers.RawChunk, error) {
	if len(s.held) > 0 {
		h := s.held[0]
		s.held = s.held[1:]
		c := providers.RawChunk{Bytes: h.raw, Info: h.info}
		if !c.Info.Complete {
			c.Decoded = h.chunk // decoded and normalised by readFirst
		}
		return c, nil
	}
	data, err := s.nextEvent()
	if err != nil {
		return providers.RawChunk{}, err
	}
	c := providers.RawChunk{Bytes: data}
	if c.Info, err = openaijson.InspectChunk(data); err != nil {
		return providers.RawChunk{}, s.malformed(err) // the verdict UnmarshalChunk would give
	}
	if c.Decoded, err = s.settle(data, c.Info); err != nil {
		return providers.RawChunk{}, s.malformed(err)
	}
	return c, nil
}

// nextEvent reads the next data event after the first: io.EOF after the final
// event, a StreamError when the stream stops before it.
func (s *stream) nextEvent() ([]byte, error) {
	ev, err := s.conn.Next(s.finished)
	if err != nil {
		return nil, err
	}
	data := ev.Data
	if bytes.Equal(data, doneMarker) {
		if !s.finished {
			return nil, s.conn.Incomplete(providers.StreamNoFinishReason, "the stream ended without a finish_reason")
		}
		s.conn.End()
		return nil, io.EOF
	}
	if e := s.c.hiddenError(data); e != nil {
		if s.finished { // after the answer is whole: it stays complete
			s.conn.End()
			return nil, io.EOF
		}
		return nil, s.conn.Incomplete(providers.StreamErrorEvent, fmt.Sprintf("the provider sent an error mid-stream: %s", e.Message))
	}
	return data, nil
}

// Pending reports whether the next Recv can return without waiting for the upstream.
func (s *stream) Pending() bool { return len(s.held) > 0 || s.conn.Pending() }

// Close releases the upstream connection.
func (s *stream) Close() error { return s.conn.Close() }
