package fakeupstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchyard/switchyard/anthropicjson"
)

// Anthropic is a fake Anthropic API on 127.0.0.1:0 speaking the Messages API's
// wire exactly (shapes from the recordings in
// ../shared/corpus/provider-recordings/anthropic/):
//
//   - POST /v1/messages: a message, or with "stream": true the SSE events
//     framed "event: TYPE\ndata: JSON\n\n" (message_start, content_block_start,
//     ping, content_block_delta per word, content_block_stop, message_delta,
//     message_stop);
//   - POST /v1/messages/count_tokens: {"input_tokens": N} (or the Reply's Body);
//   - GET /v1/models: Anthropic's pages ({"data":[...],"has_more","first_id",
//     "last_id"}, after_id and limit honoured; see SetModelsPage).
//
// Answers come from the embedded Server's script (Reply): Status gives
// Anthropic's error body ({"type":"error","error":{"type","message"}}, the type
// Anthropic gives the status: 529 overloaded_error, 429 rate_limit_error, ...)
// with Header (retry-after); Body replaces a message; Events replaces a stream,
// each a whole frame without its blank line (see AnthropicEvent, AnthropicStream,
// AnthropicToolStream, AnthropicThinkingStream); Delay, Reset, CutAfter,
// StallAfter/Stall, TokenDelay, Burst, HeadersOnly, Text and ID work as for
// OpenAI's wire. Every POST is recorded (Requests) with its path, headers and body.
type Anthropic struct {
	*Server
	// URL is the API root without /v1 (a provider's base_url).
	URL string

	srv      *httptest.Server
	mu       sync.Mutex
	pageSize int
}

// NewAnthropic starts a fake Anthropic API serving models (default:
// claude-sonnet-4-20250514, claude-3-5-haiku-20241022).
func NewAnthropic(models ...string) *Anthropic {
	if len(models) == 0 {
		models = []string{"claude-sonnet-4-20250514", "claude-3-5-haiku-20241022"}
	}
	a := &Anthropic{Server: &Server{models: models}}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	a.URL = a.srv.URL
	a.Server.URL = a.srv.URL
	a.Server.srv = a.srv
	return a
}

// SetModelsPage sets the page size GET /v1/models answers with when the request
// gives no limit (0: every model on one page).
func (a *Anthropic) SetModelsPage(n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pageSize = n
}

func (a *Anthropic) serve(w http.ResponseWriter, r *http.Request) {
	s := a.Server
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		a.serveModels(w, r)
	case r.Method == http.MethodPost && (r.URL.Path == "/v1/messages" || r.URL.Path == "/v1/messages/count_tokens"):
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		s.mu.Unlock()
		a.serveMessages(w, r, body, s.next())
		if r.Context().Err() != nil {
			s.gone.Add(1)
		}
		s.finished.Add(1)
	default:
		writeAnthropicError(w, http.StatusNotFound, anthropicjson.ErrorNotFound, "Not found: "+r.Method+" "+r.URL.Path)
	}
}

// AnthropicErrorBody is Anthropic's error body.
func AnthropicErrorBody(typ, msg string) string {
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
	return string(b)
}

func writeAnthropicError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", "req_fake")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, AnthropicErrorBody(typ, msg))
}

func (a *Anthropic) serveModels(w http.ResponseWriter, r *http.Request) {
	a.Server.mu.Lock()
	st, models := a.Server.modelsSt, a.Server.models
	a.Server.mu.Unlock()
	a.mu.Lock()
	limit := a.pageSize
	a.mu.Unlock()
	if st != 0 {
		writeAnthropicError(w, st, anthropicjson.TypeForStatus(st), "models are unavailable")
		return
	}
	if n, err := strconv.Atoi(r.URL.Query().Get("limit")); err == nil && n > 0 && (limit == 0 || n < limit) {
		limit = n
	}
	start := 0
	if after := r.URL.Query().Get("after_id"); after != "" {
		for i, m := range models {
			if m == after {
				start = i + 1
			}
		}
	}
	end := len(models)
	if limit > 0 && start+limit < end {
		end = start + limit
	}
	page := models[start:end]
	var b bytes.Buffer
	b.WriteString(`{"data":[`)
	for i, m := range page {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":"model","id":%q,"display_name":%q,"created_at":"2025-05-22T00:00:00Z"}`, m, m)
	}
	first, last := "", ""
	if len(page) > 0 {
		first, last = page[0], page[len(page)-1]
	}
	fmt.Fprintf(&b, `],"has_more":%t,"first_id":%q,"last_id":%q}`, end < len(models), first, last)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b.Bytes())
}

func (a *Anthropic) serveMessages(w http.ResponseWriter, r *http.Request, body []byte, rep Reply) {
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
		writeAnthropicError(w, rep.Status, anthropicjson.TypeForStatus(rep.Status), fmt.Sprintf("fake upstream error %d", rep.Status))
		return
	}
	if msg := thinkingRefusal(body); msg != "" {
		writeAnthropicError(w, http.StatusBadRequest, anthropicjson.ErrorInvalidRequest, msg)
		return
	}
	var req struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	_ = json.Unmarshal(body, &req)
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
	if r.URL.Path == "/v1/messages/count_tokens" {
		w.Header().Set("Content-Type", "application/json")
		if rep.Body != "" {
			_, _ = io.WriteString(w, rep.Body)
			return
		}
		_, _ = io.WriteString(w, `{"input_tokens":14}`)
		return
	}
	if rep.ID == "" {
		rep.ID = "msg_fake01"
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		if rep.Body != "" {
			_, _ = io.WriteString(w, rep.Body)
			return
		}
		_, _ = io.WriteString(w, AnthropicMessage(rep.ID, req.Model, rep.Text))
		return
	}
	events := rep.Events
	if events == nil {
		events = AnthropicStream(rep.ID, req.Model, rep.Text)
	}
	writeFrames(w, r, events, rep)
}

// writeFrames writes whole SSE frames, each followed by its blank line, with the
// Reply's stream faults (Burst, CutAfter, StallAfter, TokenDelay); both wires'
// streams are written by it.
func writeFrames(w http.ResponseWriter, r *http.Request, frames []string, rep Reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	if rep.Burst {
		_, _ = io.WriteString(w, strings.Join(frames, "\n\n")+"\n\n")
		return
	}
	if flusher != nil {
		flusher.Flush()
	}
	for i, f := range frames {
		if rep.CutAfter > 0 && i == rep.CutAfter {
			reset(w)
			return
		}
		if rep.StallAfter > 0 && i == rep.StallAfter {
			select {
			case <-time.After(rep.Stall):
			case <-r.Context().Done():
				return
			}
		}
		if i > 0 && rep.TokenDelay > 0 {
			select {
			case <-time.After(rep.TokenDelay):
			case <-r.Context().Done():
				return
			}
		}
		if _, err := io.WriteString(w, f+"\n\n"); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
}

// AnthropicEvent is one SSE frame as Anthropic writes it: "event: TYPE\ndata: JSON"
// (the blank line after it is the writer's).
func AnthropicEvent(typ, data string) string { return "event: " + typ + "\ndata: " + data }

// AnthropicMessage is a message answering text, shaped as the recorded messages.json.
func AnthropicMessage(id, model, text string) string {
	t, _ := json.Marshal(text)
	return fmt.Sprintf(`{"model":%q,"id":%q,"type":"message","role":"assistant","content":[{"type":"text","text":%s}],`+
		`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":14,"cache_creation_input_tokens":0,`+
		`"cache_read_input_tokens":0,"output_tokens":5,"service_tier":"standard"}}`, model, id, t)
}

func messageStart(id, model string) string {
	return AnthropicEvent("message_start", fmt.Sprintf(`{"type":"message_start","message":{"model":%q,"id":%q,"type":"message",`+
		`"role":"assistant","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,`+
		`"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1,"service_tier":"standard"}}}`, model, id))
}

func messageEnd(stopReason string, output int) []string {
	return []string{
		AnthropicEvent("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},`+
			`"usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":%d}}`, stopReason, output)),
		AnthropicEvent("message_stop", `{"type":"message_stop"}`),
	}
}

func textDeltas(index int, text string) []string {
	var out []string
	for _, word := range strings.SplitAfter(text, " ") {
		t, _ := json.Marshal(word)
		out = append(out, AnthropicEvent("content_block_delta",
			fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%s}}`, index, t)))
	}
	return out
}

// AnthropicStream is the stream of a message answering text, framed as the
// recorded messages_stream.txt: message_start, a text block (start, ping, a
// delta per word, stop), message_delta (end_turn) and message_stop.
func AnthropicStream(id, model, text string) []string {
	ev := []string{
		messageStart(id, model),
		AnthropicEvent("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
		AnthropicEvent("ping", `{"type": "ping"}`),
	}
	ev = append(ev, textDeltas(0, text)...)
	ev = append(ev, AnthropicEvent("content_block_stop", `{"type":"content_block_stop","index":0}`))
	return append(ev, messageEnd("end_turn", 5)...)
}

// AnthropicToolStream is a stream that says text and then calls tool name with
// the JSON input, given in two input_json_delta pieces (stop_reason tool_use).
func AnthropicToolStream(id, model, text, toolID, name, input string) []string {
	ev := []string{
		messageStart(id, model),
		AnthropicEvent("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
	}
	ev = append(ev, textDeltas(0, text)...)
	ev = append(ev,
		AnthropicEvent("content_block_stop", `{"type":"content_block_stop","index":0}`),
		AnthropicEvent("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":1,"content_block":`+
			`{"type":"tool_use","id":%q,"name":%q,"input":{}}}`, toolID, name)))
	half := len(input) / 2
	for _, piece := range []string{input[:half], input[half:]} {
		p, _ := json.Marshal(piece)
		ev = append(ev, AnthropicEvent("content_block_delta",
			fmt.Sprintf(`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":%s}}`, p)))
	}
	ev = append(ev, AnthropicEvent("content_block_stop", `{"type":"content_block_stop","index":1}`))
	return append(ev, messageEnd("tool_use", 40)...)
}

// AnthropicThinkingStream is a stream that thinks (a thinking block: thinking
// deltas, then its signature) and then answers text.
func AnthropicThinkingStream(id, model, thinking, signature, text string) []string {
	th, _ := json.Marshal(thinking)
	sig, _ := json.Marshal(signature)
	ev := []string{
		messageStart(id, model),
		AnthropicEvent("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`),
		AnthropicEvent("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":`+string(th)+`}}`),
		AnthropicEvent("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":`+string(sig)+`}}`),
		AnthropicEvent("content_block_stop", `{"type":"content_block_stop","index":0}`),
		AnthropicEvent("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`),
	}
	ev = append(ev, textDeltas(1, text)...)
	ev = append(ev, AnthropicEvent("content_block_stop", `{"type":"content_block_stop","index":1}`))
	return append(ev, messageEnd("end_turn", 60)...)
}

// AnthropicErrorEvent is an in-band error event (Anthropic sends one inside a
// 200 stream, e.g. overloaded_error).
func AnthropicErrorEvent(typ, msg string) string {
	return AnthropicEvent("error", AnthropicErrorBody(typ, msg))
}

// AnthropicRecordedStream reads a recorded SSE transcript (messages_stream.txt)
// into frames for Reply.Events.
func AnthropicRecordedStream(transcript string) []string {
	var out []string
	for _, f := range strings.Split(strings.ReplaceAll(transcript, "\r\n", "\n"), "\n\n") {
		if f = strings.Trim(f, "\n"); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// thinkingRefusal is Anthropic's 400 for a request's history that it does not
// accept: a turn with empty content (but a final assistant one), a thinking
// block whose signature is not one Anthropic made (here: an empty one), and,
// with thinking enabled during a tool loop (the
// last turn carries tool_result blocks), a last assistant turn that does not
// begin with a thinking block. "" when the history is acceptable.
func thinkingRefusal(body []byte) string {
	var req struct {
		Thinking *struct {
			Type string `json:"type"`
		} `json:"thinking"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil {
		return ""
	}
	type block struct {
		Type      string  `json:"type"`
		Signature *string `json:"signature"`
	}
	lastAssistant, toolLoop := []block(nil), false
	for i, m := range req.Messages {
		var blocks []block
		if json.Unmarshal(m.Content, &blocks) != nil {
			blocks = nil // a string content
		} else if len(blocks) == 0 && !(i == len(req.Messages)-1 && m.Role == "assistant") {
			return fmt.Sprintf("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
		}
		for j, b := range blocks {
			if b.Type == "thinking" && (b.Signature == nil || *b.Signature == "") {
				return fmt.Sprintf("messages.%d.content.%d: Invalid `signature` in `thinking` block", i, j)
			}
		}
		switch m.Role {
		case "assistant":
			lastAssistant, toolLoop = blocks, false
		case "user":
			toolLoop = false
			for _, b := range blocks {
				toolLoop = toolLoop || b.Type == "tool_result"
			}
		}
	}
	if req.Thinking != nil && req.Thinking.Type == "enabled" && toolLoop && len(lastAssistant) > 0 &&
		lastAssistant[0].Type != "thinking" && lastAssistant[0].Type != "redacted_thinking" {
		return "Expected `thinking` or `redacted_thinking`, but found `" + lastAssistant[0].Type + "`. When `thinking` is enabled, " +
			"a final `assistant` message must start with a thinking block."
	}
	return ""
}
