package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/switchyard/switchyard/anthropicjson"
	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/router"
)

// streamMessages serves a streaming message as Anthropic's Server-Sent Events
// ("event: TYPE\ndata: JSON\n\n"). A failure before the first event is a plain
// JSON error with its status; a failure after it is one "error" event and no
// message_stop, so that no SDK takes a broken stream for a whole message.
func (f *front) streamMessages(w http.ResponseWriter, r *http.Request, ms messagesService, req messageRequest) {
	sink := &headerSink{method: methodStreamMessage}
	ss := newSSEStream(w, sink)
	ss.ctx = grpc.NewContextWithServerTransportStream(incomingContext(r), sink)
	info := &grpc.StreamServerInfo{FullMethod: sink.method, IsServerStream: true}
	err := f.in.stream(f.in.chat, ss, info, func(_ any, stream grpc.ServerStream) error {
		return ms.stream(stream.Context(), req, ss)
	})
	if !ss.started {
		copyHeaders(w, sink)
		if err == nil {
			err = statusOf(apiError{httpStatus: http.StatusBadGateway, errType: "server_error", code: "empty_response",
				message: "provider returned an empty stream"})
		}
		writeMessagesError(w, err)
		return
	}
	if err == nil || r.Context().Err() != nil {
		return // complete (message_stop was relayed), or the client went away
	}
	e := fromStatus(status.Convert(err))
	if e.Code == codeShuttingDown { // ended by the drain deadline
		e.Message = "Switchyard is shutting down; the stream ended before its final event"
	}
	ss.buf = append(ss.buf[:0], "event: error\ndata: "...)
	ss.buf = append(ss.buf, anthropicjson.ErrorJSON(anthropicType(e.HTTPStatus), e.Message, w.Header().Get("X-Request-Id"))...)
	ss.more = false
	_ = ss.write()
}

// SendEvent writes one Anthropic event; the first one writes the headers.
func (s *sseStream) SendEvent(typ string, data []byte) error {
	if !s.started {
		copyHeaders(s.w, s.sink)
		setRequestIDHeader(s.w)
	}
	s.start()
	s.buf = append(append(append(append(s.buf[:0], "event: "...), typ...), "\ndata: "...), data...)
	return s.write()
}

// stream opens the stream along the model's targets and relays its events.
func (s messagesService) stream(ctx context.Context, req messageRequest, sse *sseStream) error {
	rep, call, err := s.start(ctx, req)
	rep.stream = true
	if err != nil {
		return err
	}
	body, head := req.body, req.head
	call.IncludeUsage = true // the chat wire counts tokens only when asked
	// upstream is the upstream call's own context: cancelling it releases the
	// upstream without touching the client's call.
	upstream, release := context.WithCancel(ctx)
	defer release()
	chat := &translation{body: body}
	st, route, err := router.Streaming(s.router, upstream, head.Model, call,
		func(ctx context.Context, t router.Target, a providers.Attempt) (providers.EventStream, error) {
			if m, ok := t.Provider.(providers.Messenger); ok {
				return m.StreamMessages(ctx, a, body) // the client's body: the provider sets its model
			}
			req, err := chat.request(t)
			if err != nil {
				return nil, err
			}
			cs, err := t.Provider.Stream(ctx, &providers.Request{Body: req, Attempt: a})
			if err != nil {
				return nil, err
			}
			return newChatEvents(cs, a.Model), nil
		}, func(s providers.EventStream) { _ = s.Close() }, router.WatchEvents)
	s.routed(ctx, rep, route)
	if err != nil {
		return toStatus(s.log, err)
	}
	defer st.Close()
	first := true
	var seen anthropicjson.Usage
	for {
		ev, err := st.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			s.incomplete(ctx, route, err)
			return toStatus(s.log, err)
		}
		if first {
			first = false
			s.metrics.TimeToFirstToken(route.Provider, route.Model, time.Since(rep.start))
			rep.firstToken()
		}
		noteUsage(rep, &seen, ev)
		if err := sse.SendEvent(ev.Type, ev.Data); err != nil {
			return err
		}
	}
}

// noteUsage notes the usage message_start and message_delta carry (cumulative).
// seen is the stream's usage so far: message_start's, then each member a
// message_delta sends (one that leaves input_tokens out, sending only the cache
// counts, keeps message_start's).
func noteUsage(rep *report, seen *anthropicjson.Usage, ev providers.Event) {
	switch ev.Type {
	case anthropicjson.EventMessageStart:
		var e struct {
			Message struct {
				Usage *anthropicjson.Usage `json:"usage"`
			} `json:"message"`
		}
		if json.Unmarshal(ev.Data, &e) != nil || e.Message.Usage == nil {
			return
		}
		*seen = *e.Message.Usage
	case anthropicjson.EventMessageDelta:
		var e struct {
			Usage *anthropicjson.DeltaUsage `json:"usage"`
		}
		if json.Unmarshal(ev.Data, &e) != nil || e.Usage == nil {
			return
		}
		if e.Usage.InputTokens != nil {
			seen.InputTokens = *e.Usage.InputTokens
		}
		if e.Usage.CacheReadInputTokens != nil {
			seen.CacheReadInputTokens = e.Usage.CacheReadInputTokens
		}
		if e.Usage.CacheCreationInputTokens != nil {
			seen.CacheCreationInputTokens = e.Usage.CacheCreationInputTokens
		}
		seen.OutputTokens = e.Usage.OutputTokens
	default:
		return
	}
	if in := inputTokens(*seen); in > 0 {
		rep.tokensIn = in
	}
	final := ev.Type == anthropicjson.EventMessageDelta
	if final { // message_start's output_tokens is a placeholder, not what was made
		rep.tokensOut = seen.OutputTokens
	}
	rep.anthropicUsage(*seen, final)
}

// chatEvents is a chat stream read as Anthropic events (anthropicjson.EventWriter):
// it ends with io.EOF after message_stop only when the chat stream ended whole,
// and passes on the chat stream's error (incomplete, hidden error) otherwise.
type chatEvents struct {
	s     providers.Stream
	w     *anthropicjson.EventWriter
	queue []providers.Event
	done  bool
}

func newChatEvents(s providers.Stream, model string) *chatEvents {
	c := &chatEvents{s: s}
	c.w = anthropicjson.NewEventWriter(model, func(typ string, data []byte) error {
		c.queue = append(c.queue, providers.Event{Type: typ, Data: data})
		return nil
	})
	return c
}

func (c *chatEvents) Next() (providers.Event, error) {
	for len(c.queue) == 0 {
		if c.done {
			return providers.Event{}, io.EOF
		}
		chunk, err := c.s.Recv()
		switch {
		case errors.Is(err, io.EOF):
			c.done = true
			err = c.w.End()
		case err == nil:
			err = c.w.Chunk(chunk)
		}
		if err != nil {
			return providers.Event{}, err
		}
	}
	ev := c.queue[0]
	c.queue = c.queue[1:]
	return ev, nil
}

func (c *chatEvents) Close() error { return c.s.Close() }
