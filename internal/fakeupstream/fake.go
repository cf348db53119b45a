// Package fakeupstream is an OpenAI-compatible upstream on 127.0.0.1:0 for tests
// and benchmarks. It answers like OpenAI does (bodies shaped after recorded OpenAI
// traffic in testdata/, SSE framing, usage chunk, error bodies) and injects the
// faults Switchyard must survive: error statuses with Retry-After, errors hidden in
// a 200, empty answers, resets, streams cut short or stalled, headers and then
// silence, slow answers.
package fakeupstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Reply scripts one answer. The zero Reply is a normal, successful answer.
type Reply struct {
	// Status, when not 0 or 200, answers with this status and an OpenAI error body
	// (Body overrides the body).
	Status int
	// Body replaces the whole body of a non-stream answer (any status).
	Body string
	// Header is added to the response.
	Header map[string]string
	// Delay waits before the response headers.
	Delay time.Duration
	// Reset closes the connection without answering.
	Reset bool
	// Text is the answer's content (default "Hello from the fake upstream!").
	Text string
	// Events replaces the whole SSE body of a stream answer: raw "data:" payloads,
	// written each as "data: …\n\n" (include "[DONE]" yourself).
	Events []string
	// CutAfter ends a stream after this many events, without its final event and
	// without [DONE] (0 = no cut).
	CutAfter int
	// StallAfter stops writing (connection kept open) after this many events for Stall.
	StallAfter int
	// Stall is how long a stalled stream stays silent.
	Stall time.Duration
	// TokenDelay separates stream events.
	TokenDelay time.Duration
	// Burst writes the whole stream in one write, as a fast upstream's buffered
	// answer arrives.
	Burst bool
	// HeadersOnly sends 200 and the response headers (event-stream for a stream),
	// then nothing, until the client goes away or the server closes.
	HeadersOnly bool
	// RejectPrefill answers 400 (invalid_request_error) to a request whose last
	// message is the assistant's, as providers that refuse an assistant prefill do.
	RejectPrefill bool
	// AnswerFirst answers a non-stream request with Body (or a short completion)
	// before reading its body, then, after Delay, reads the body (recorded when
	// read): the client's transport is still writing it after its round trip
	// returned.
	AnswerFirst bool
	// ID replaces the completion id of a stream answer (default "chatcmpl-fake2").
	ID string
}

// Request is one recorded request.
type Request struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

// JSON decodes the request body.
func (r Request) JSON() map[string]any {
	var m map[string]any
	_ = json.Unmarshal(r.Body, &m)
	return m
}

// Server is a running fake upstream.
type Server struct {
	// URL is the API base, e.g. http://127.0.0.1:PORT/v1.
	URL string

	srv      *httptest.Server
	finished atomic.Int64
	gone     atomic.Int64
	mu       sync.Mutex
	script   []Reply
	fallback Reply
	requests []Request
	models   []string
	modelsSt int
}

// New starts a fake upstream on 127.0.0.1:0 serving models (default: gpt-4o, gpt-4o-mini).
func New(models ...string) *Server {
	if len(models) == 0 {
		models = []string{"gpt-4o", "gpt-4o-mini"}
	}
	s := &Server{models: models}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/v1"
	return s
}

// Close stops the server and drops open connections.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Script queues replies for the next chat requests, in order.
func (s *Server) Script(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, replies...)
}

// SetDefault sets the reply used when the script is empty.
func (s *Server) SetDefault(r Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fallback = r
}

// FailModels makes GET /models answer status (0 restores it).
func (s *Server) FailModels(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.modelsSt = status
}

// Requests returns the chat requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Finished is the number of chat requests whose answer has ended (written, or
// abandoned because the client went away).
func (s *Server) Finished() int { return int(s.finished.Load()) }

// Gone is the number of chat requests whose client went away (closed the request
// or its connection) before their answer ended.
func (s *Server) Gone() int { return int(s.gone.Load()) }

// Count is the number of chat requests received so far.
func (s *Server) Count() int { return len(s.Requests()) }

func (s *Server) next() Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.script) == 0 {
		return s.fallback
	}
	r := s.script[0]
	s.script = s.script[1:]
	return r
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		s.serveModels(w)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
		rep := s.next()
		if rep.AnswerFirst {
			s.answerFirst(w, r, rep)
			return
		}
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		s.mu.Unlock()
		s.serveChat(w, r, body, rep)
		if r.Context().Err() != nil {
			s.gone.Add(1)
		}
		s.finished.Add(1)
	default:
		writeError(w, http.StatusNotFound, "Unknown request URL: "+r.Method+" "+r.URL.Path, "invalid_request_error", "unknown_url")
	}
}

func (s *Server) serveModels(w http.ResponseWriter) {
	s.mu.Lock()
	st, models := s.modelsSt, s.models
	s.mu.Unlock()
	if st != 0 {
		writeError(w, st, "models are unavailable", "server_error", "")
		return
	}
	var b bytes.Buffer
	b.WriteString(`{"object":"list","data":[`)
	for i, m := range models {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%q,"object":"model","created":1686588896,"owned_by":"system"}`, m)
	}
	b.WriteString(`]}`)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b.Bytes())
}

// writeError writes OpenAI's error body.
func writeError(w http.ResponseWriter, status int, msg, typ, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	codeJSON := "null"
	if code != "" {
		codeJSON = fmt.Sprintf("%q", code)
	}
	fmt.Fprintf(w, `{"error":{"message":%q,"type":%q,"param":null,"code":%s}}`, msg, typ, codeJSON)
}

func reset(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			conn.Close()
		}
	}
}

// answerFirst is Reply.AnswerFirst.
func (s *Server) answerFirst(w http.ResponseWriter, r *http.Request, rep Reply) {
	_ = http.NewResponseController(w).EnableFullDuplex()
	answer := rep.Body
	if answer == "" {
		answer = `{"id":"chatcmpl-first","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,` +
			`"message":{"role":"assistant","content":"answered first"},"finish_reason":"stop"}],` +
			`"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
	_, _ = io.WriteString(w, answer)
	_ = http.NewResponseController(w).Flush()
	time.Sleep(rep.Delay)
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	s.mu.Unlock()
	s.finished.Add(1)
}

func (s *Server) serveChat(w http.ResponseWriter, r *http.Request, body []byte, rep Reply) {
	if rep.Delay > 0 {
		select {
		case <-time.After(rep.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if rep.Reset {
		reset(w)
		return
	}
	for k, v := range rep.Header {
		w.Header().Set(k, v)
	}
	if rep.Status != 0 && rep.Status != http.StatusOK {
		if rep.Body != "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(rep.Status)
			_, _ = io.WriteString(w, rep.Body)
			return
		}
		writeError(w, rep.Status, fmt.Sprintf("fake upstream error %d", rep.Status), errorType(rep.Status), "")
		return
	}
	var req struct {
		Model         string `json:"model"`
		Stream        bool   `json:"stream"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(body, &req)
	if rep.RejectPrefill && len(req.Messages) > 0 && req.Messages[len(req.Messages)-1].Role == "assistant" {
		writeError(w, http.StatusBadRequest, "This model does not support assistant message prefill. The conversation must end with a user message.",
			"invalid_request_error", "")
		return
	}
	if rep.Text == "" {
		rep.Text = "Hello from the fake upstream!"
	}
	if rep.HeadersOnly {
		w.Header().Set("Content-Type", map[bool]string{true: "text/event-stream", false: "application/json"}[req.Stream])
		w.WriteHeader(http.StatusOK)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		<-r.Context().Done()
		return
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		if rep.Body != "" {
			_, _ = io.WriteString(w, rep.Body)
			return
		}
		_, _ = w.Write(completion(req.Model, rep.Text))
		return
	}
	events := rep.Events
	if events == nil {
		events = streamEvents(req.Model, rep.Text, req.StreamOptions.IncludeUsage)
		if rep.ID != "" {
			for i, ev := range events {
				events[i] = strings.Replace(ev, `"id":"chatcmpl-fake2"`, `"id":`+strconv.Quote(rep.ID), 1)
			}
		}
	}
	s.writeStream(w, r, events, rep)
}

func errorType(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

// writeStream writes OpenAI's "data:" events with the Reply's stream faults
// (see writeFrames).
func (s *Server) writeStream(w http.ResponseWriter, r *http.Request, events []string, rep Reply) {
	frames := make([]string, len(events))
	for i, ev := range events {
		frames[i] = "data: " + ev
	}
	writeFrames(w, r, frames, rep)
}

const fingerprint = "fp_29330a9688"

// completion is a chat.completion shaped like OpenAI's (see testdata/chat_completion.json).
func completion(model, text string) []byte {
	content, _ := json.Marshal(text)
	return []byte(fmt.Sprintf(`{"id":"chatcmpl-fake1","object":"chat.completion","created":1769092737,"model":%q,`+
		`"choices":[{"index":0,"message":{"role":"assistant","content":%s,"refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],`+
		`"usage":{"prompt_tokens":17,"completion_tokens":4,"total_tokens":21,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},`+
		`"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},`+
		`"service_tier":"default","system_fingerprint":%q}`, model, content, fingerprint))
}

// streamEvents are OpenAI's chunks for text: a role chunk, one chunk per word, a
// finish chunk, the usage chunk when asked, and [DONE].
func streamEvents(model, text string, usage bool) []string {
	head := fmt.Sprintf(`{"id":"chatcmpl-fake2","object":"chat.completion.chunk","created":1769092764,"model":%q,"service_tier":"default","system_fingerprint":%q,`, model, fingerprint)
	ev := []string{head + `"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"obfuscation":"iPgRzm"}`}
	for _, word := range strings.SplitAfter(text, " ") {
		c, _ := json.Marshal(word)
		ev = append(ev, head+`"choices":[{"index":0,"delta":{"content":`+string(c)+`},"logprobs":null,"finish_reason":null}],"obfuscation":"ZGF"}`)
	}
	ev = append(ev, head+`"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"obfuscation":"pH"}`)
	if usage {
		ev = append(ev, head+`"choices":[],"usage":{"prompt_tokens":17,"completion_tokens":4,"total_tokens":21,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`)
	}
	return append(ev, "[DONE]")
}
