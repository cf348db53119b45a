package anthropicjson

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

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
