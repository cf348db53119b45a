package server

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/anthropicjson"
	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/providers"
)

const streamJSON = `{"model":"claude","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`

var nativeEvents = []providers.Event{
	{Type: "message_start", Data: []byte(`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":1}}}`)},
	{Type: "content_block_start", Data: []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)},
	{Type: "ping", Data: []byte(`{"type": "ping"}`)},
	{Type: "content_block_delta", Data: []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`)},
}

var nativeEnd = []providers.Event{
	{Type: "content_block_stop", Data: []byte(`{"type":"content_block_stop","index":0}`)},
	{Type: "message_delta", Data: []byte(`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":4}}`)},
	{Type: "message_stop", Data: []byte(`{"type":"message_stop"}`)},
}

func sse(events []providers.Event) string {
	var b strings.Builder
	for _, ev := range events {
		b.WriteString("event: " + ev.Type + "\ndata: " + string(ev.Data) + "\n\n")
	}
	return b.String()
}

// TestMessagesStreamNative: a Messenger's events reach the client exactly as it
// framed them, pings included.
func TestMessagesStreamNative(t *testing.T) {
	t.Parallel()
	all := append(append([]providers.Event{}, nativeEvents...), nativeEnd...)
	p := &fakeMessenger{name: "anth", events: all}
	r := serveMessages(t, nil, p)
	resp, body := postMessages(t, r, "/v1/messages", streamJSON, "X-Api-Key", "sk-master")
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	require.NotEmpty(t, resp.Header.Get("Request-Id"))
	require.Equal(t, "anth/claude", resp.Header.Get("X-Switchyard-Target"))
	require.Equal(t, sse(all), body)
	line := logLine(t, r, "request", "method", "StreamMessage")
	require.Equal(t, true, line["stream"])
	require.EqualValues(t, 9, line["prompt_tokens"])
	require.EqualValues(t, 4, line["completion_tokens"])
}

// TestMessagesStreamIncompleteEndsWithAnError: a stream that breaks after its
// first event ends with an error event and no message_stop, whatever the
// target's wire; one that fails before it is a plain error with its status.
func TestMessagesStreamIncompleteEndsWithAnError(t *testing.T) {
	t.Parallel()
	cut := &providers.StreamError{Provider: "x", Kind: providers.StreamClosedEarly, Reason: "the connection closed before message_stop"}
	native := &fakeMessenger{name: "anth", events: nativeEvents, end: cut}
	chat := &fakeChat{name: "oai", chunks: []*pb.ChatCompletionChunk{textChunk("Hel", "")}, end: cut}
	hidden := &fakeMessenger{name: "hid", events: nativeEvents[:1],
		end: &providers.Error{Provider: "hid", Status: 529, Type: "overloaded_error", Message: "Overloaded", Kind: providers.KindHiddenError}}
	r := serveMessages(t, nil, native, chat, hidden)
	for _, tc := range []struct{ model, prefix, errType, message string }{
		{"anth/claude", sse(nativeEvents), "api_error", "ended before its final event"},
		{"oai/gpt", "event: message_start\n", "api_error", "ended before its final event"},
		{"hid/claude", sse(nativeEvents[:1]), "overloaded_error", "Overloaded"},
	} {
		t.Run(tc.model, func(t *testing.T) {
			resp, body := postMessages(t, r, "/v1/messages", strings.Replace(streamJSON, "claude", tc.model, 1), "X-Api-Key", "sk-master")
			require.Equal(t, 200, resp.StatusCode)
			require.True(t, strings.HasPrefix(body, tc.prefix), body)
			require.NotContains(t, body, "event: message_stop")
			require.NotContains(t, body, "event: message_delta")
			last := body[strings.LastIndex(body, "\n\nevent: ")+2:]
			require.True(t, strings.HasPrefix(last, "event: error\ndata: {"), last)
			require.True(t, strings.HasSuffix(last, "}\n\n"), last)
			typ, msg := anthropicError(t, strings.TrimSuffix(strings.TrimPrefix(last, "event: error\ndata: "), "\n\n"))
			require.Equal(t, tc.errType, typ)
			require.Contains(t, msg, tc.message)
		})
	}
}

func TestMessagesStreamTranslated(t *testing.T) {
	t.Parallel()
	usage := &pb.ChatCompletionChunk{Id: "chatcmpl-s1", Model: "gpt", Usage: &pb.Usage{PromptTokens: 11, CompletionTokens: 2}}
	chat := &fakeChat{name: "oai", chunks: []*pb.ChatCompletionChunk{textChunk("Hel", ""), textChunk("lo", ""), textChunk("", "length"), usage}}
	r := serveMessages(t, nil, chat)
	resp, body := postMessages(t, r, "/v1/messages", strings.Replace(streamJSON, "claude", "gpt", 1), "X-Api-Key", "sk-master")
	require.Equal(t, 200, resp.StatusCode)
	var types []string
	for _, ev := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		typ, _, ok := strings.Cut(strings.TrimPrefix(ev, "event: "), "\n")
		require.True(t, ok, ev)
		types = append(types, typ)
	}
	require.Equal(t, []string{"message_start", "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
		"message_delta", "message_stop"}, types)
	require.Contains(t, body, `"stop_reason":"max_tokens"`)
	require.Contains(t, body, `"input_tokens":11`)
	require.True(t, chat.reqs[0].GetStream())
	line := logLine(t, r, "request", "method", "StreamMessage")
	require.EqualValues(t, 11, line["prompt_tokens"])
	require.EqualValues(t, 2, line["completion_tokens"])
}

// TestMessagesDrainDeadline: calls still running at the drain deadline are
// answered in Anthropic's shape: a unary call 503 overloaded_error, a started
// stream one error event (and no message_stop); both logged as 503.
func TestMessagesDrainDeadline(t *testing.T) {
	t.Parallel()
	r := serve(t, func(c *Config) { c.DrainTimeout = 100 * time.Millisecond })
	unary := make(chan string, 1)
	go func() {
		_, body := postMessages(t, r, "/v1/messages", `{"model":"up/m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, "X-Api-Key", "sk-master")
		unary <- body
	}()
	require.Equal(t, "chat", <-r.p.started)
	req, err := http.NewRequest(http.MethodPost, "http://"+r.http+"/v1/messages",
		strings.NewReader(`{"model":"up/m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	req.Header.Set("X-Api-Key", "sk-master")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, "stream", <-r.p.started)
	rd := bufio.NewReader(resp.Body)
	var seen strings.Builder
	for !strings.Contains(seen.String(), "text_delta") {
		line, err := rd.ReadString('\n')
		require.NoError(t, err)
		seen.WriteString(line)
	}

	r.stop() // returns after the deadline and the answers

	typ, msg := anthropicError(t, <-unary)
	require.Equal(t, "overloaded_error", typ)
	require.Contains(t, msg, "shutting down")
	rest, err := io.ReadAll(rd)
	require.NoError(t, err)
	require.NotContains(t, string(rest), "event: message_stop")
	require.True(t, strings.HasPrefix(strings.TrimLeft(string(rest), "\n"), "event: error\ndata: "), string(rest))
	typ, msg = anthropicError(t, strings.TrimSpace(strings.TrimPrefix(strings.TrimLeft(string(rest), "\n"), "event: error\ndata: ")))
	require.Equal(t, "overloaded_error", typ)
	require.Contains(t, msg, "shutting down")
	logs := r.logs.String()
	require.NotContains(t, logs, `"status":499`)
	require.Equal(t, 2, strings.Count(logs, `"status":503`), logs)
}

// TestMessagesStreamUsageKeepsWhatALaterEventLeavesOut: message_delta's usage is
// cumulative, but a member it leaves out keeps message_start's value.
func TestMessagesStreamUsageKeepsWhatALaterEventLeavesOut(t *testing.T) {
	t.Parallel()
	start := `{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"c","content":[],` +
		`"usage":{"input_tokens":1000,"cache_read_input_tokens":5000,"output_tokens":1}}}`
	for _, tc := range []struct {
		name, delta string
		in, out     int
	}{
		{"cache counts without input_tokens", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"cache_read_input_tokens":5000,"output_tokens":50}}`, 6000, 50},
		{"output only", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":50}}`, 6000, 50},
		{"every member, cumulative", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":1200,"cache_read_input_tokens":5000,"cache_creation_input_tokens":10,"output_tokens":50}}`, 6210, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep := &report{}
			var seen anthropicjson.Usage
			noteUsage(rep, &seen, providers.Event{Type: "message_start", Data: []byte(start)})
			require.Equal(t, 6000, rep.tokensIn)
			noteUsage(rep, &seen, providers.Event{Type: "message_delta", Data: []byte(tc.delta)})
			require.Equal(t, tc.in, rep.tokensIn)
			require.Equal(t, tc.out, rep.tokensOut)
			require.Equal(t, 5000, rep.usage.cached)
		})
	}
}
