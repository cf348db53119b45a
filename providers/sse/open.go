package sse

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/switchyard/switchyard/providers"
)

// Request is one streaming request to send (Open) and how its provider names
// what goes wrong with it.
type Request struct {
	// New builds the request on the context Open gives it (which the
	// first-token deadline and the stream's end cancel).
	New func(ctx context.Context) (*http.Request, error)
	// Do sends it: the provider's HTTP client.
	Do func(*http.Request) (*http.Response, error)
	// TransportError names a send that failed; it reads why the context ended,
	// so it runs before the context is cancelled.
	TransportError func(ctx context.Context, err error) error
	// StatusError names a non-2xx answer from its first providers.MaxErrorBytes.
	StatusError func(status int, h http.Header, body []byte) *providers.Error
	// JSONAnswer names a 2xx answer whose Content-Type is application/json, not
	// text/event-stream, from its first providers.MaxResponseBytes: an error
	// hidden in it, or a reply to a request it took for a non-stream one. nil:
	// the answer is read as events.
	JSONAnswer func(body []byte) error
	// FirstToken bounds the wait for the first content, headers included (0: none).
	FirstToken time.Duration
}

// Open sends r and returns its event stream once a 2xx answer's headers have
// arrived, with the first-token deadline running: an upstream that answers
// headers, or a role-only chunk, and then nothing fails as a first-token
// timeout before any byte reached the client (and is retried). The caller names
// the stream's provider and secrets (Conn), reads up to the first content, then
// ends the opening with Started. Nothing of r is kept: its funcs stay the
// caller's.
func Open(ctx context.Context, r Request) (*Conn, Deadline, error) {
	sctx, cancel := context.WithCancelCause(ctx)
	hr, err := r.New(sctx)
	if err != nil {
		cancel(nil)
		return nil, Deadline{}, err
	}
	hr.Header.Set("Accept", "text/event-stream")
	deadline := StartDeadline(r.FirstToken, cancel)
	resp, err := r.Do(hr)
	if err != nil {
		deadline.Stop()
		err = r.TransportError(sctx, err) // before cancel: it reads why sctx ended
		cancel(nil)
		return nil, Deadline{}, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		body, _ := providers.ErrorBody(resp)
		resp.Body.Close()
		deadline.Stop()
		cancel(nil)
		return nil, Deadline{}, r.StatusError(resp.StatusCode, resp.Header, body)
	}
	if r.JSONAnswer != nil && isJSON(resp.Header.Get("Content-Type")) {
		// An event stream labelled JSON (it happens) is read as events: the
		// body is JSON when it begins with an object or an array.
		head, isJSONValue, err := peekJSON(resp.Body)
		rest := io.MultiReader(bytes.NewReader(head), resp.Body)
		if err == nil && !isJSONValue {
			return NewConn(sctx, cancel, readCloser{rest, resp.Body}), deadline, nil
		}
		var body []byte
		if err == nil {
			body, err = io.ReadAll(io.LimitReader(rest, providers.MaxResponseBytes))
		}
		resp.Body.Close()
		deadline.Stop()
		if err != nil {
			err = r.TransportError(sctx, err) // before cancel: it reads why sctx ended
		} else {
			err = r.JSONAnswer(body)
		}
		cancel(nil)
		return nil, Deadline{}, err
	}
	return NewConn(sctx, cancel, resp.Body), deadline, nil
}

// peekJSON reads the start of a body up to its first byte that is not white
// space (at most 4 KiB) and says whether it begins a JSON object or array (an
// event stream's lines begin with a field name or a colon); head is what it
// read. The end of the body there is neither.
func peekJSON(body io.Reader) (head []byte, isJSONValue bool, err error) {
	buf := make([]byte, 0, 512)
	for len(buf) < 4<<10 {
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if t := bytes.TrimLeft(buf, " \t\r\n"); len(t) > 0 {
			return buf, t[0] == '{' || t[0] == '[', nil
		}
		if err == io.EOF {
			return buf, false, nil
		}
		if err != nil {
			return buf, false, err
		}
		if len(buf) == cap(buf) {
			buf = append(buf, make([]byte, cap(buf))...)[:len(buf)]
		}
	}
	return buf, false, nil
}

// readCloser reads r and closes c.
type readCloser struct {
	io.Reader
	io.Closer
}

// isJSON reports whether a Content-Type is application/json, parameters aside.
func isJSON(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "application/json")
}

// Started ends the opening of a stream whose first content was read (err nil)
// or not (err, the stream then closed). The first content and the first-token
// deadline may have crossed (the context was cancelled): that is a first-token
// timeout. On success the idle timer starts.
func (c *Conn) Started(deadline Deadline, err error, timeouts providers.Timeouts, idle time.Duration) error {
	if err == nil && !deadline.Stop() {
		err = c.Crossed(timeouts)
	}
	if err != nil {
		deadline.Stop()
		c.Close()
		return err
	}
	c.StartIdle(idle)
	return nil
}
