package anthropic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/switchyard/switchyard/anthropicjson"
	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/providers/sse"
)

const messagesPath = "/v1/messages"

// body translates a chat request into Anthropic's (a 400 naming what cannot be).
func (c *Client) body(req *providers.Request, stream bool) ([]byte, error) {
	b, err := anthropicjson.FromChat(req.Body, req.Model, anthropicjson.Options{DefaultMaxTokens: c.cfg.DefaultMaxTokens, Stream: stream})
	if err != nil {
		return nil, c.unsupported(err)
	}
	return b, nil
}

// Chat sends a chat completion translated to a Messages request and translates
// the answer back.
func (c *Client) Chat(ctx context.Context, req *providers.Request) (*pb.ChatCompletion, error) {
	body, err := c.body(req, false)
	if err != nil {
		return nil, err
	}
	answer, err := c.post(ctx, messagesPath, body, &req.Attempt)
	if err != nil {
		return nil, err
	}
	out, err := anthropicjson.ToCompletion(answer)
	if err != nil {
		return nil, c.answerError("returned an unreadable response", err)
	}
	if out.Model == "" {
		out.Model = req.Model
	}
	return out, nil
}

// open sends a streaming request and returns its event stream once the response
// headers arrived, the first-token deadline running (see sse.Open).
func (c *Client) open(ctx context.Context, body []byte, a *providers.Attempt) (*sse.Conn, sse.Deadline, error) {
	conn, deadline, err := sse.Open(ctx, sse.Request{
		New: func(ctx context.Context) (*http.Request, error) {
			return c.newRequest(ctx, http.MethodPost, messagesPath, body, a)
		},
		Do: c.http.Do, TransportError: c.transportError, StatusError: c.parseError,
		FirstToken: c.cfg.FirstTokenTimeout,
	})
	if err == nil {
		conn.Provider, conn.Secrets = c.name, c.secrets
	}
	return conn, deadline, err
}

// started finishes opening a stream whose first content was read (err nil) or
// not (see sse.Conn.Started).
func (c *Client) started(conn *sse.Conn, deadline sse.Deadline, err error) error {
	return conn.Started(deadline, err, c.timeouts(), c.cfg.StreamIdleTimeout)
}

// Stream sends a streaming chat completion translated to a Messages request and
// waits for its first event with content; the chunks before it (the role chunk
// of message_start) are held and delivered first.
func (c *Client) Stream(ctx context.Context, req *providers.Request) (providers.Stream, error) {
	body, err := c.body(req, true)
	if err != nil {
		return nil, err
	}
	conn, deadline, err := c.open(ctx, body, &req.Attempt)
	if err != nil {
		return nil, err
	}
	usage := req.IncludeUsage || req.Body.GetStreamOptions().GetIncludeUsage()
	s := &chatStream{c: c, conn: conn, tr: anthropicjson.NewChunkTranslator(usage, time.Now())}
	if err := c.started(conn, deadline, s.readFirst()); err != nil {
		return nil, err
	}
	return s, nil
}

// chatStream is an Anthropic stream read as OpenAI chunks.
type chatStream struct {
	c    *Client
	conn *sse.Conn
	tr   *anthropicjson.ChunkTranslator
	// held are the chunks translated but not yet delivered.
	held []*pb.ChatCompletionChunk
}

// readFirst reads up to the first event whose chunks carry content (see
// providers.HasContent), holding every chunk. Errors here are plain errors with a
// status: an error event is the hidden error it reports (retried, failed over).
func (s *chatStream) readFirst() error {
	for events := 0; ; events++ {
		ev, err := s.conn.First(s.c.timeouts())
		if err != nil {
			return err
		}
		chunks, err := s.tr.Translate(ev.Type, ev.Data)
		if err != nil {
			return s.c.answerError("sent an unreadable stream event", err)
		}
		s.held = append(s.held, chunks...)
		for _, ch := range chunks {
			if providers.HasContent(ch) {
				return nil
			}
		}
		if s.tr.Complete() {
			if len(s.held) == 0 {
				return sse.Empty(s.c.name)
			}
			return nil
		}
		if events >= sse.MaxHeld && len(s.held) > 0 {
			return nil
		}
	}
}

// Recv returns the next chunk, io.EOF after message_stop (and the chunks it
// made), or after the finish chunk when the stream stops before message_stop.
func (s *chatStream) Recv() (*pb.ChatCompletionChunk, error) {
	for len(s.held) == 0 {
		if s.tr.Complete() {
			s.conn.End()
			return nil, io.EOF
		}
		ev, err := s.conn.Next(s.tr.Finished())
		if err != nil {
			return nil, err
		}
		chunks, err := s.tr.Translate(ev.Type, ev.Data)
		if err != nil && s.tr.Finished() { // after the finish chunk: the answer stays complete
			s.conn.End()
			return nil, io.EOF
		}
		if err != nil {
			var ae *anthropicjson.APIError
			if errors.As(err, &ae) {
				return nil, s.conn.Incomplete(providers.StreamErrorEvent,
					fmt.Sprintf("the provider sent an error mid-stream: %s: %s", ae.Type, ae.Message))
			}
			return nil, s.conn.Incomplete(providers.StreamMalformedChunk, fmt.Sprintf("the provider sent an unreadable event: %v", err))
		}
		s.held = chunks
	}
	ch := s.held[0]
	s.held = s.held[1:]
	return ch, nil
}

// Pending reports whether the next Recv can return without waiting for the upstream.
func (s *chatStream) Pending() bool { return len(s.held) > 0 || s.tr.Complete() || s.conn.Pending() }

// Close releases the upstream connection.
func (s *chatStream) Close() error { return s.conn.Close() }
