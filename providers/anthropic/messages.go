package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/switchyard/switchyard/anthropicjson"
	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/providers/sse"
)

// native is a /v1/messages body as the upstream gets it: the client's, with only
// its model rewritten to a.Model and, when its history holds turns another model
// answered, what Anthropic would refuse of them left out
// (anthropicjson.PrepareNative). A body that is no JSON object is the client's 400.
func (c *Client) native(a providers.Attempt, body []byte) ([]byte, error) {
	b, err := anthropicjson.PrepareNative(body, a.Model)
	if err != nil {
		return nil, &providers.Error{Provider: c.name, Status: http.StatusBadRequest, Type: anthropicjson.ErrorInvalidRequest,
			Message: fmt.Sprintf("the request body is not a JSON object: %v", err), Err: err}
	}
	return b, nil
}

// Messages sends a /v1/messages body as it came (model rewritten) and returns the
// upstream's answer as it came; an error body inside a 200 is the hidden error it is.
func (c *Client) Messages(ctx context.Context, a providers.Attempt, body []byte) ([]byte, error) {
	return c.sendNative(ctx, messagesPath, a, body, anthropicjson.CheckMessage)
}

// CountTokens sends a /v1/messages/count_tokens body as it came (model
// rewritten) and returns the upstream's answer ({"input_tokens": N}).
func (c *Client) CountTokens(ctx context.Context, a providers.Attempt, body []byte) ([]byte, error) {
	return c.sendNative(ctx, messagesPath+"/count_tokens", a, body, anthropicjson.CheckTokenCount)
}

// sendNative posts a native body to path and returns the answer as it came,
// once check (the endpoint's shape: a message, a token count) says it is one;
// an error body inside a 200 is the hidden error it is.
func (c *Client) sendNative(ctx context.Context, path string, a providers.Attempt, body []byte, check func([]byte) error) ([]byte, error) {
	b, err := c.native(a, body)
	if err != nil {
		return nil, err
	}
	answer, err := c.post(ctx, path, b, &a)
	if err != nil {
		return nil, err
	}
	if typ, msg, ok := anthropicjson.ParseError(answer); ok {
		return nil, c.hiddenError(&anthropicjson.APIError{Type: typ, Message: msg})
	}
	if err := check(answer); err != nil {
		return nil, c.answerError("returned an unreadable response", err)
	}
	return answer, nil
}

// StreamMessages sends a streaming /v1/messages body as it came (model rewritten)
// and returns the upstream's events once the first with content arrived (a text,
// thinking or tool-input delta, a tool_use block, the stop reason); the events
// before it (message_start, an empty block's start, pings) are held and given
// first. Failures before it are plain errors (an error event is the hidden error
// it reports); after it an error event ends the stream with that error (a
// *providers.Error that also wraps providers.ErrStreamIncomplete), and a stream
// without message_stop is incomplete.
func (c *Client) StreamMessages(ctx context.Context, a providers.Attempt, body []byte) (providers.EventStream, error) {
	b, err := c.native(a, body)
	if err != nil {
		return nil, err
	}
	conn, deadline, err := c.open(ctx, b, &a)
	if err != nil {
		return nil, err
	}
	s := &eventStream{c: c, conn: conn}
	if err := c.started(conn, deadline, s.readFirst()); err != nil {
		return nil, err
	}
	return s, nil
}

// eventStream is an Anthropic stream relayed event by event.
type eventStream struct {
	c    *Client
	conn *sse.Conn
	// held are the events read before the first content, copied.
	held     []providers.Event
	complete bool // message_stop was read (or written: see Next)
	finished bool // message_delta gave the stop_reason: the answer is whole
}

// messageStop is the event that ends a message, written by Switchyard for a
// stream whose answer was whole (message_delta's stop_reason) when what came
// after it failed, as it writes [DONE] on the chat wire.
var messageStop = providers.Event{Type: anthropicjson.EventMessageStop, Data: []byte(`{"type":"message_stop"}`)}

// readFirst reads up to the first event with content, judged by translating the
// events to chunks (see providers.HasContent): what counts as content is the same
// on both surfaces.
func (s *eventStream) readFirst() error {
	tr := anthropicjson.NewChunkTranslator(false, time.Time{})
	for {
		ev, err := s.conn.First(s.c.timeouts())
		if err != nil {
			return err
		}
		ev.Type = eventType(ev)
		chunks, err := tr.Translate(ev.Type, ev.Data)
		if err != nil {
			return s.c.answerError("sent an unreadable stream event", err)
		}
		s.held = append(s.held, providers.Event{Type: ev.Type, Data: append([]byte(nil), ev.Data...)})
		s.complete, s.finished = tr.Complete(), tr.Finished()
		if s.complete {
			return nil
		}
		for _, ch := range chunks {
			if providers.HasContent(ch) {
				return nil
			}
		}
		if len(s.held) >= sse.MaxHeld {
			return nil
		}
	}
}

// eventType is the event's type: its "event:" field, else its data's "type".
func eventType(ev providers.Event) string {
	if ev.Type != "" {
		return ev.Type
	}
	var head struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(ev.Data, &head)
	return head.Type
}

// Next returns the next event; io.EOF after message_stop. Once message_delta
// gave the stop_reason the answer is whole: a cut, a stall, an unreadable or an
// error event after it ends the stream with Switchyard's own message_stop
// (SPEC: a stream that sent its final event stays complete).
func (s *eventStream) Next() (providers.Event, error) {
	if len(s.held) > 0 {
		ev := s.held[0]
		s.held = s.held[1:]
		return ev, nil
	}
	if s.complete {
		s.conn.End()
		return providers.Event{}, io.EOF
	}
	ev, err := s.conn.Next(s.finished)
	if errors.Is(err, io.EOF) && s.finished {
		return s.stop()
	}
	if err != nil {
		return ev, err
	}
	if !json.Valid(ev.Data) {
		if s.finished {
			return s.stop()
		}
		return providers.Event{}, s.conn.Incomplete(providers.StreamMalformedChunk, "the provider sent an event that is not JSON")
	}
	ev.Type = eventType(ev)
	switch ev.Type {
	case anthropicjson.EventMessageStop:
		if !s.finished { // Anthropic gives the stop_reason first: the stream was cut
			return providers.Event{}, s.conn.Incomplete(providers.StreamNoFinishReason, "message_stop came before a stop_reason")
		}
		s.complete = true
	case anthropicjson.EventMessageDelta:
		s.finished = s.finished || hasStopReason(ev.Data)
	case anthropicjson.EventError:
		if s.finished {
			return s.stop()
		}
		return providers.Event{}, s.errorEvent(ev.Data)
	}
	return ev, nil
}

// stop ends a whole answer's stream with Switchyard's message_stop.
func (s *eventStream) stop() (providers.Event, error) {
	s.conn.End()
	s.complete = true
	return messageStop, nil
}

// hasStopReason reports whether a message_delta gives the stop_reason.
func hasStopReason(data []byte) bool {
	var d struct {
		Delta struct {
			StopReason *string `json:"stop_reason"`
		} `json:"delta"`
	}
	return json.Unmarshal(data, &d) == nil && d.Delta.StopReason != nil
}

// errorEvent ends the stream on an error event after its first content: the
// error Anthropic reported (its type's status, Code and Type, message), wrapping
// the StreamError that says the stream is incomplete.
func (s *eventStream) errorEvent(data []byte) error {
	var body anthropicjson.ErrorBody
	_ = json.Unmarshal(data, &body)
	ae := &anthropicjson.APIError{Type: body.Error.Type, Message: body.Error.Message}
	if ae.Type == "" {
		ae.Type = anthropicjson.ErrorAPI
	}
	e := s.c.hiddenError(ae)
	e.Err = s.conn.Incomplete(providers.StreamErrorEvent, fmt.Sprintf("the provider sent an error mid-stream: %s: %s", ae.Type, ae.Message))
	return e
}

// Close releases the upstream connection.
func (s *eventStream) Close() error { return s.conn.Close() }
