package anthropicjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/stretchr/testify/require"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/openaijson"
)

// Seeds beyond testdata/fuzz: the recordings, the table tests' requests, streams.
func addRecordings(f *testing.F) {
	files, _ := filepath.Glob("testdata/recordings/messages*.json")
	for _, name := range files {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data)
		}
	}
}

// FuzzFromChat: whatever request the REST surface decodes, FromChat does not
// panic, and what it accepts is a JSON Anthropic request with the model set,
// alternating turns and tool inputs that are objects.
func FuzzFromChat(f *testing.F) {
	for _, s := range []string{
		`{"model":"x","messages":[{"role":"user","content":"hi"}]}`,
		`{"messages":[{"role":"system","content":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}]},{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AA"}}]},{"role":"assistant","content":"","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}],"thinking_blocks":[{"type":"thinking","thinking":"t","signature":"s"}]},{"role":"tool","tool_call_id":"c","content":"r"}]}`,
		`{"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":{"type":"function","function":{"name":"f"}},"parallel_tool_calls":false,"stop":["a"],"reasoning_effort":"low","max_tokens":2000,"top_k":3}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := &pb.ChatCompletionRequest{}
		if openaijson.Unmarshal(body, req) != nil {
			return
		}
		out, err := FromChat(req, "claude", Options{})
		if err != nil {
			return
		}
		var r Request
		require.NoError(t, json.Unmarshal(out, &r), "%s", out)
		require.Equal(t, "claude", r.Model)
		for i := 1; i < len(r.Messages); i++ {
			require.NotEqual(t, r.Messages[i-1].Role, r.Messages[i].Role, "turns alternate: %s", out)
		}
		for _, m := range r.Messages {
			for _, b := range m.Content.Blocks {
				if b.Type == BlockToolUse {
					var input map[string]json.RawMessage
					require.NoError(t, json.Unmarshal(b.Input, &input), "tool input is an object: %s", out)
				}
			}
		}
	})
}

// FuzzToCompletion: any body either translates (and encodes as the REST
// surface writes it) or is an error; never a panic.
func FuzzToCompletion(f *testing.F) {
	addRecordings(f)
	f.Add([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"x"}}`))
	f.Add([]byte(`{"type":"message","content":[{"type":"tool_use","id":"t","name":"f","input":{"a":[1]}},{"type":"redacted_thinking","data":"d"}],"usage":{"input_tokens":9223372036854775807,"cache_read_input_tokens":1}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := ToCompletionAt(body, testNow)
		if err != nil {
			return
		}
		out := openaijson.Marshal(c)
		require.True(t, json.Valid(out), "%s", out)
		require.GreaterOrEqual(t, c.GetUsage().GetTotalTokens(), int32(0))
	})
}

// FuzzChunkTranslator: events are the input's lines (data only, the type read
// from it); whatever they are, translation does not panic and each chunk it
// makes encodes and decodes back as an OpenAI chunk with choice index 0.
func FuzzChunkTranslator(f *testing.F) {
	var recorded []byte
	for _, e := range parseSSE(f, recording(f, "messages_stream.txt")) {
		recorded = append(recorded, e.data+"\n"...)
	}
	f.Add(recorded)
	var tools []byte
	for _, e := range toolStream {
		tools = append(tools, e.data+"\n"...)
	}
	f.Add(tools)
	f.Fuzz(func(t *testing.T, input []byte) {
		tr := NewChunkTranslator(true, testNow)
		for _, line := range bytes.Split(input, []byte("\n")) {
			chunks, err := tr.Translate("", line)
			if err != nil {
				return
			}
			for _, c := range chunks {
				var back pb.ChatCompletionChunk
				require.NoError(t, openaijson.UnmarshalChunk(openaijson.Marshal(c), &back))
				for _, ch := range back.GetChoices() {
					require.Zero(t, ch.GetIndex())
				}
			}
		}
	})
}

// FuzzToChat: whatever body a client sends /v1/messages, ToChat does not
// panic, and a member of the wrong type it names by a path with list indices
// is a member the body has, as the body spells it.
func FuzzToChat(f *testing.F) {
	for _, b := range []string{
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":5,"system":5,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":5}]}]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","input_schema":{}},{"name":5}]}`,
		`{"model":"m","max_tokens":5,"system":[{"type":"text","text":[]}],"messages":[]}`,
	} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		_, err := ToChat(body)
		if err == nil {
			return
		}
		var se *SurfaceError
		if !errors.As(err, &se) {
			return // the head's errors (not an object, no model): ReadHead's own
		}
		if !strings.Contains(se.Param, "[") || !strings.HasPrefix(se.Message, "Input should be a valid") {
			return // a missing member ("Field required") is named by its schema's name
		}
		var root any
		require.NoError(t, json.Unmarshal(body, &root), "an indexed path is found only in JSON")
		require.True(t, hasPath(root, se.Param), "%q names no member of %s", se.Param, body)
	})
}

// hasPath reports whether v has the member at path ("a[1].b").
func hasPath(v any, path string) bool {
	for path != "" {
		if path[0] == '[' {
			end := strings.IndexByte(path, ']')
			i, err := strconv.Atoi(path[1:end])
			l, ok := v.([]any)
			if err != nil || !ok || i >= len(l) {
				return false
			}
			v, path = l[i], strings.TrimPrefix(path[end+1:], ".")
			continue
		}
		name := path
		if i := strings.IndexAny(path, ".["); i >= 0 {
			name = path[:i]
		}
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		if v, ok = m[name]; !ok {
			return false
		}
		path = strings.TrimPrefix(path[len(name):], ".")
	}
	return true
}

// FuzzEventWriter: whatever chunks a chat stream sends (one JSON a line), the
// events the /v1/messages surface writes are Anthropic's wire: a block starts
// only when none is open, a delta is for the open block, and a stream that
// ends well is a message the Go SDK accumulates.
func FuzzEventWriter(f *testing.F) {
	for _, s := range [][]string{
		{`{"choices":[{"index":0,"delta":{"content":"hi"}}]}`, `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`},
		{`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{\"a\":"}},{"index":1,"id":"b","function":{"name":"g","arguments":"{"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"}"}},{"index":0,"function":{"arguments":"1}"}}]}}]}`},
		{`{"choices":[{"index":0,"delta":{"reasoning_content":"r","content":"c","tool_calls":[{"index":3,"id":"x","function":{"name":"f","arguments":"[]"}}]}}]}`},
	} {
		f.Add([]byte(strings.Join(s, "\n")))
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		var events []string
		open := -1
		w := NewEventWriter("m", func(typ string, data []byte) error {
			var e struct {
				Index int `json:"index"`
			}
			require.NoError(t, json.Unmarshal(data, &e))
			switch typ {
			case EventContentBlockStart:
				require.Equal(t, -1, open, "a block started while another is open")
				open = e.Index
			case EventContentBlockDelta:
				require.Equal(t, open, e.Index, "a delta for a block that is not open")
			case EventContentBlockStop:
				require.Equal(t, open, e.Index)
				open = -1
			}
			events = append(events, string(data))
			return nil
		})
		for _, line := range bytes.Split(input, []byte("\n")) {
			c := &pb.ChatCompletionChunk{}
			if openaijson.UnmarshalChunk(line, c) != nil {
				continue
			}
			if w.Chunk(c) != nil {
				return
			}
		}
		if w.End() != nil {
			return
		}
		var msg anthropic.Message
		for _, ev := range events {
			var e anthropic.MessageStreamEventUnion
			require.NoError(t, e.UnmarshalJSON([]byte(ev)))
			require.NoError(t, msg.Accumulate(e), ev)
		}
	})
}
