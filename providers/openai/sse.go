package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/openaijson"
	"github.com/switchyard/switchyard/providers"
)

var (
	errIdle       = errors.New("stream idle timeout")
	errFirstToken = errors.New("stream first token timeout")
	// errEventTooLarge is an event longer than MaxResponseBytes.
	errEventTooLarge = fmt.Errorf("a stream event larger than the %d MiB Switchyard reads", MaxResponseBytes>>20)
)

// maxHeld bounds the events without content held before the first one with
// content; past it the stream begins anyway (the first-token timer still bounds
// the wait, this bounds the memory).
const maxHeld = 64

// Stream sends a streaming chat completion and waits for its first event that
// carries content; events before it (a role-only chunk) are held and delivered
// first by Recv and NextRaw.
func (c *Client) Stream(ctx context.Context, req *providers.Request) (providers.Stream, error) {
	sctx, cancel := context.WithCancelCause(ctx)
	hr, err := c.newRequest(sctx, http.MethodPost, c.endpoint(req.Model, "chat/completions"), c.upstreamBody(req, true), req)
	if err != nil {
		cancel(nil)
		return nil, err
	}
	hr.Header.Set("Accept", "text/event-stream")
	// The wait for the first content (headers and role-only chunks included) is
	// bounded: an upstream that answers headers, or a role chunk, and then nothing
	// must not hold the client until its own deadline. It fails as a first-token
	// timeout, before any byte reached the client, and is retried.
	var firstTimer *time.Timer
	if d := c.cfg.FirstTokenTimeout; d > 0 {
		firstTimer = time.AfterFunc(d, func() { cancel(errFirstToken) })
	}
	resp, err := c.http.Do(hr)
	if err != nil {
		stopTimer(firstTimer)
		err = c.transportError(sctx, err) // before cancel: it reads why sctx ended
		cancel(nil)
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBytes))
		resp.Body.Close()
		stopTimer(firstTimer)
		cancel(nil)
		return nil, c.parseError(resp.StatusCode, resp.Header, body)
	}
	s := &stream{c: c, body: resp.Body, cancel: cancel, ctx: sctx, model: req.Model,
		events: eventReader{rd: newReader(resp.Body)}, choices: int(max(1, req.Body.GetN()))}
	err = s.readFirst()
	if err == nil && !stopTimer(firstTimer) {
		// The first content and the timeout crossed: the context is cancelled.
		err = c.transportError(sctx, context.Cause(sctx))
	}
	if err != nil {
		stopTimer(firstTimer)
		s.Close()
		return nil, err
	}
	if idle := c.cfg.StreamIdleTimeout; idle > 0 {
		s.idle = idle
		s.timer = time.AfterFunc(time.Hour, func() { cancel(errIdle) })
		s.timer.Stop()
	}
	return s, nil
}

// stopTimer stops t, if any, and reports whether it had not fired.
func stopTimer(t *time.Timer) bool { return t == nil || t.Stop() }

type stream struct {
	c      *Client
	ctx    context.Context
	body   io.ReadCloser
	cancel context.CancelCauseFunc
	events eventReader
	model  string

	idle  time.Duration
	timer *time.Timer

	// held are the events read while waiting for the first content (role-only
	// chunks, then the first with content), delivered before any further read.
	held []heldChunk
	// choices is how many choices the request asked for (n); with more than one,
	// ended records which have carried a finish_reason (by index).
	choices  int
	ended    map[int32]bool
	finished bool // every choice carried finish_reason
	done     bool
	closeMu  sync.Once
}

// heldChunk is an event read before the stream was handed on: decoded, and as sent.
type heldChunk struct {
	chunk *pb.ChatCompletionChunk
	raw   []byte
}

// readFirst reads up to the first event that carries content (see hasContent),
// holding every event before it. Errors here are plain errors with a status: no
// byte has reached the client, so the attempt can be retried. A stream that ends
// with nothing but role-only chunks is an empty stream.
func (s *stream) readFirst() error {
	for {
		data, err := s.events.next()
		if err != nil {
			switch {
			case s.ctx.Err() != nil:
				return s.c.transportError(s.ctx, err)
			case errors.Is(err, errEventTooLarge):
				return s.c.unreadable("sent an unreadable stream event", err)
			case errors.Is(err, io.EOF):
				return s.empty()
			}
			return s.c.transportError(s.ctx, err)
		}
		if bytes.Equal(data, doneMarker) {
			return s.empty()
		}
		if e := s.c.hiddenError(data); e != nil {
			return e
		}
		chunk, err := s.decode(data)
		if err != nil {
			return s.c.unreadable("sent an unreadable stream event", err)
		}
		s.held = append(s.held, heldChunk{chunk: chunk, raw: append([]byte(nil), data...)})
		if hasContent(chunk) || len(s.held) >= maxHeld {
			return nil
		}
	}
}

func (s *stream) empty() error {
	return &providers.Error{Provider: s.c.name, Status: http.StatusBadGateway, Err: providers.ErrEmptyResponse,
		Message: "provider returned an empty stream", Code: "empty_response", Kind: providers.KindEmptyStream}
}

// reasoningKeys are the delta members upstreams stream reasoning in.
var reasoningKeys = []string{"reasoning_content", "reasoning"}

// hasContent reports whether chunk starts the answer: text, reasoning, a refusal,
// a tool-call delta, or a finish (an empty answer is an answer). A role-only
// chunk, or one without choices, does not.
func hasContent(chunk *pb.ChatCompletionChunk) bool {
	for _, ch := range chunk.GetChoices() {
		d := ch.GetDelta()
		if d.GetContent() != "" || d.GetRefusal() != "" || len(d.GetToolCalls()) > 0 || ch.GetFinishReason() != "" {
			return true
		}
		for _, k := range reasoningKeys {
			if v := d.GetExtra().GetFields()[k]; v != nil && v.GetStringValue() != "" {
				return true
			}
		}
	}
	return false
}

func (s *stream) decode(data []byte) (*pb.ChatCompletionChunk, error) {
	chunk := &pb.ChatCompletionChunk{}
	if err := openaijson.UnmarshalChunk(data, chunk); err != nil {
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

func (s *stream) incomplete(kind, reason string) error {
	s.done = true
	s.Close()
	return &providers.StreamError{Provider: s.c.name, Kind: kind, Reason: s.c.redactString(reason)}
}

// malformed ends the stream on a chunk that does not decode: the chunk is never
// passed on, in part or whole.
func (s *stream) malformed(err error) error {
	return s.incomplete(providers.StreamMalformedChunk, fmt.Sprintf("the provider sent an unreadable chunk: %v", err))
}

// Recv returns the next chunk, io.EOF after the final event.
func (s *stream) Recv() (*pb.ChatCompletionChunk, error) {
	if len(s.held) > 0 {
		h := s.held[0]
		s.held = s.held[1:]
		return h.chunk, nil
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
		c := providers.RawChunk{Bytes: h.raw}
		c.Info, _ = openaijson.InspectChunk(c.Bytes)
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
	switch {
	case !c.Info.Complete:
		if c.Decoded, err = s.decode(data); err != nil {
			return providers.RawChunk{}, s.malformed(err)
		}
	case s.choices > 1 || s.ended != nil || !loneChoiceZero(c.Info.Choices, c.Info.NonZeroIndex):
		// Several choices (asked for or sent): which ones finished needs the
		// chunk's indexes, as track reads them for Recv.
		if _, err = s.decode(data); err != nil {
			return providers.RawChunk{}, s.malformed(err)
		}
	case c.Info.Finished:
		s.finished = true
	}
	return c, nil
}

// nextEvent reads the next data event after the first: io.EOF after the final
// event, a StreamError when the stream stops before it.
func (s *stream) nextEvent() ([]byte, error) {
	if s.done {
		return nil, io.EOF
	}
	if s.timer != nil {
		s.timer.Reset(s.idle)
	}
	data, err := s.events.next()
	if s.timer != nil {
		s.timer.Stop()
	}
	if err != nil {
		if cause := context.Cause(s.ctx); errors.Is(cause, errIdle) {
			return nil, s.incomplete(providers.StreamStalled, fmt.Sprintf("no data from the provider for %s", s.idle))
		}
		if ctxErr := s.ctx.Err(); ctxErr != nil {
			s.done = true
			s.Close()
			return nil, ctxErr
		}
		if s.finished && errors.Is(err, io.EOF) {
			s.done = true
			s.Close()
			return nil, io.EOF
		}
		if errors.Is(err, errEventTooLarge) {
			return nil, s.malformed(err)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, s.incomplete(providers.StreamClosedEarly, "the connection closed before the final event")
		}
		return nil, s.incomplete(providers.StreamReadError, fmt.Sprintf("reading the stream failed: %v", rootCause(err)))
	}
	if bytes.Equal(data, doneMarker) {
		if !s.finished {
			return nil, s.incomplete(providers.StreamNoFinishReason, "the stream ended without a finish_reason")
		}
		s.done = true
		s.Close()
		return nil, io.EOF
	}
	if e := s.c.hiddenError(data); e != nil {
		return nil, s.incomplete(providers.StreamErrorEvent, fmt.Sprintf("the provider sent an error mid-stream: %s", e.Message))
	}
	return data, nil
}

// Pending reports whether the next Recv can return without waiting for the upstream.
func (s *stream) Pending() bool { return len(s.held) > 0 || (!s.done && s.events.pending()) }

// Close releases the upstream connection.
func (s *stream) Close() error {
	s.closeMu.Do(func() {
		if s.timer != nil {
			s.timer.Stop()
		}
		s.cancel(nil)
		s.body.Close()
		putReader(s.events.rd)
	})
	return nil
}
