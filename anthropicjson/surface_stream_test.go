package anthropicjson

import (
	"encoding/json"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/stretchr/testify/require"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/openaijson"
)

type surfaceEvent struct{ typ, data string }

// surfaceEvents runs chunks (OpenAI chunk JSON) through an EventWriter; end says
// whether the stream ended well (End).
func surfaceEvents(t *testing.T, chunks []string, end bool) []surfaceEvent {
	t.Helper()
	var out []surfaceEvent
	w := NewEventWriter("fallback", func(typ string, data []byte) error {
		out = append(out, surfaceEvent{typ, string(data)})
		return nil
	})
	for _, c := range chunks {
		chunk := &pb.ChatCompletionChunk{}
		require.NoError(t, openaijson.UnmarshalChunk([]byte(c), chunk))
		require.NoError(t, w.Chunk(chunk))
	}
	if end {
		require.NoError(t, w.End())
	}
	return out
}

const chunkHead = `{"id":"chatcmpl-s1","object":"chat.completion.chunk","created":1,"model":"gpt-4o",`

func TestEventWriterFraming(t *testing.T) {
	t.Parallel()
	got := surfaceEvents(t, []string{
		chunkHead + `"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		chunkHead + `"choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}`,
		chunkHead + `"choices":[{"index":0,"delta":{"content":" world"},"finish_reason":null}]}`,
		chunkHead + `"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		chunkHead + `"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":4}}}`,
	}, true)
	want := []surfaceEvent{
		{"message_start", `{"type":"message_start","message":{"id":"msg_s1","type":"message","role":"assistant","model":"gpt-4o","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}}`},
		{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" world"}}`},
		{"content_block_stop", `{"type":"content_block_stop","index":0}`},
		{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":6,"output_tokens":2,"cache_creation_input_tokens":0,"cache_read_input_tokens":4}}`},
		{"message_stop", `{"type":"message_stop"}`},
	}
	require.Equal(t, len(want), len(got), "%v", got)
	for i := range want {
		require.Equal(t, want[i].typ, got[i].typ, i)
		require.JSONEq(t, want[i].data, got[i].data, i)
	}
}

// TestEventWriterAccumulatesInTheGoSDK feeds the events to anthropic-sdk-go's own
// accumulator: thinking, text and two tool calls with their arguments in pieces
// become the blocks, indexes and stop reason the SDK expects.
func TestEventWriterAccumulatesInTheGoSDK(t *testing.T) {
	t.Parallel()
	got := surfaceEvents(t, []string{
		chunkHead + `"choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}`,
		chunkHead + `"choices":[{"index":0,"delta":{"reasoning_content":"Let me "},"finish_reason":null}]}`,
		chunkHead + `"choices":[{"index":0,"delta":{"reasoning_content":"think."},"finish_reason":null}]}`,
		chunkHead + `"choices":[{"index":0,"delta":{"content":"Checking both."},"finish_reason":null}]}`,
		chunkHead + `"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"weather","arguments":""}}]},"finish_reason":null}]}`,
		chunkHead + `"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]},"finish_reason":null}]}`,
		chunkHead + `"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]},"finish_reason":null}]}`,
		chunkHead + `"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"time","arguments":"{}"}}]},"finish_reason":null}]}`,
		chunkHead + `"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":30,"completion_tokens":9,"total_tokens":39}}`,
	}, true)
	var msg anthropic.Message
	for _, ev := range got {
		var e anthropic.MessageStreamEventUnion
		require.NoError(t, e.UnmarshalJSON([]byte(ev.data)))
		require.Equal(t, ev.typ, e.Type)
		require.NoError(t, msg.Accumulate(e), ev.data)
	}
	require.Equal(t, "msg_s1", msg.ID)
	require.Equal(t, anthropic.StopReasonToolUse, msg.StopReason)
	require.Equal(t, int64(30), msg.Usage.InputTokens)
	require.Equal(t, int64(9), msg.Usage.OutputTokens)
	require.Len(t, msg.Content, 4)
	require.Equal(t, "Let me think.", msg.Content[0].Thinking)
	require.Equal(t, "Checking both.", msg.Content[1].Text)
	require.Equal(t, "call_a", msg.Content[2].ID)
	require.Equal(t, "weather", msg.Content[2].Name)
	require.JSONEq(t, `{"city":"Paris"}`, string(msg.Content[2].Input))
	require.Equal(t, "time", msg.Content[3].Name)
	require.JSONEq(t, `{}`, string(msg.Content[3].Input))
	var last map[string]any
	require.NoError(t, json.Unmarshal([]byte(got[len(got)-1].data), &last))
	require.Equal(t, "message_stop", last["type"])
}

func TestEventWriterWithoutEndWritesNoStop(t *testing.T) {
	t.Parallel()
	got := surfaceEvents(t, []string{chunkHead + `"choices":[{"index":0,"delta":{"content":"cut"},"finish_reason":null}]}`}, false)
	for _, ev := range got {
		require.NotEqual(t, "message_stop", ev.typ)
		require.NotEqual(t, "message_delta", ev.typ)
	}
}

func TestEventWriterEmptyStreamIsStillAMessage(t *testing.T) {
	t.Parallel()
	got := surfaceEvents(t, nil, true)
	types := make([]string, len(got))
	for i, ev := range got {
		types[i] = ev.typ
	}
	require.Equal(t, []string{"message_start", "message_delta", "message_stop"}, types)
	require.Contains(t, got[0].data, `"model":"fallback"`)
}

func TestEventWriterRefusal(t *testing.T) {
	t.Parallel()
	got := surfaceEvents(t, []string{
		chunkHead + `"choices":[{"index":0,"delta":{"refusal":"No."},"finish_reason":null}]}`,
		chunkHead + `"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
	}, true)
	require.Contains(t, got[len(got)-2].data, `"stop_reason":"refusal"`)
	require.Contains(t, got[2].data, `"text":"No."`)
}

// TestEventWriterInterleavedToolCalls: calls whose pieces the chat stream
// interleaves still make Anthropic's wire, one block after another and no delta
// after its block's stop, each call with all its arguments.
func TestEventWriterInterleavedToolCalls(t *testing.T) {
	t.Parallel()
	call := func(pieces string) string {
		return chunkHead + `"choices":[{"index":0,"delta":{"tool_calls":[` + pieces + `]},"finish_reason":null}]}`
	}
	first := func(i, id, name, args string) string {
		return `{"index":` + i + `,"id":"` + id + `","type":"function","function":{"name":"` + name + `","arguments":` + args + `}}`
	}
	piece := func(i, args string) string { return `{"index":` + i + `,"function":{"arguments":` + args + `}}` }
	finish := chunkHead + `"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`
	for _, tc := range []struct {
		name   string
		chunks []string
		inputs []string
		ids    []string // the calls' ids in block order, when there are blocks other than calls
	}{
		{name: "two calls begin in one chunk, their arguments come in the next",
			chunks: []string{call(first("0", "call_a", "f", `""`) + `,` + first("1", "call_b", "g", `""`)),
				call(piece("0", `"{\"a\":1}"`) + `,` + piece("1", `"{\"b\":2}"`)), finish},
			inputs: []string{`{"a":1}`, `{"b":2}`}},
		{name: "pieces alternate",
			chunks: []string{call(first("0", "call_a", "f", `"{\"a\":"`)), call(first("1", "call_b", "g", `"{\"b\":"`)),
				call(piece("0", `"1}"`)), call(piece("1", `"2}"`)), finish},
			inputs: []string{`{"a":1}`, `{"b":2}`}},
		{name: "a call held to the end",
			chunks: []string{call(first("0", "call_a", "f", `"{\"a\":"`)), call(first("1", "call_b", "g", `"{}"`)), finish},
			inputs: []string{`{}`, `{}`}},
		{name: "a call that begins while another is held waits behind it, text between",
			chunks: []string{call(first("0", "call_a", "f", `"{\"a\":"`)), call(first("1", "call_b", "g", `"{\"b\":1}"`)),
				chunkHead + `"choices":[{"index":0,"delta":{"content":"between"}}]}`, call(first("2", "call_c", "h", `"{}"`)), finish},
			inputs: []string{`{}`, `{"b":1}`, `{}`}, ids: []string{"call_a", "call_b", "call_c"}},
		{name: "one after another streams as it comes",
			chunks: []string{call(first("0", "call_a", "f", `"{\"a\":1}"`)), call(first("1", "call_b", "g", `""`)), call(piece("1", `"{\"b\":2}"`)), finish},
			inputs: []string{`{"a":1}`, `{"b":2}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := surfaceEvents(t, tc.chunks, true)
			open := -1
			var msg anthropic.Message
			for _, ev := range got {
				var e anthropic.MessageStreamEventUnion
				require.NoError(t, e.UnmarshalJSON([]byte(ev.data)))
				switch e.Type {
				case "content_block_start":
					require.Equal(t, -1, open, "block %d started while %d is open", e.Index, open)
					open = int(e.Index)
				case "content_block_delta":
					require.Equal(t, open, int(e.Index), "delta of block %d while %d is open", e.Index, open)
				case "content_block_stop":
					require.Equal(t, open, int(e.Index))
					open = -1
				}
				require.NoError(t, msg.Accumulate(e), ev.data)
			}
			var calls []anthropic.ContentBlockUnion
			for _, b := range msg.Content {
				if b.Type == "tool_use" {
					calls = append(calls, b)
				}
			}
			require.Len(t, calls, len(tc.inputs))
			for i, want := range tc.inputs {
				require.JSONEq(t, want, string(calls[i].Input), "call %d", i)
			}
			ids := tc.ids
			if ids == nil {
				ids = []string{"call_a", "call_b"}
			}
			for i, id := range ids {
				require.Equal(t, id, calls[i].ID, "the calls keep their order")
			}
		})
	}
}

// A piece for a call whose block already stopped (text came between) cannot be
// written on Anthropic's wire: the stream is malformed, never a delta after a stop.
func TestEventWriterRefusesAPieceAfterItsBlock(t *testing.T) {
	t.Parallel()
	w := NewEventWriter("m", func(string, []byte) error { return nil })
	for _, c := range []string{
		chunkHead + `"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"f","arguments":"{\"a\":"}}]}}]}`,
		chunkHead + `"choices":[{"index":0,"delta":{"content":"between"}}]}`,
	} {
		chunk := &pb.ChatCompletionChunk{}
		require.NoError(t, openaijson.UnmarshalChunk([]byte(c), chunk))
		require.NoError(t, w.Chunk(chunk))
	}
	chunk := &pb.ChatCompletionChunk{}
	require.NoError(t, openaijson.UnmarshalChunk([]byte(chunkHead+`"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}}]}`), chunk))
	require.ErrorIs(t, w.Chunk(chunk), ErrMalformed)
}

// TestJSONShapeTellsWholeArguments: arguments read piece by piece are whole once
// their object or array has closed, whatever the pieces cut (inside strings,
// escapes, brackets in strings).
func TestJSONShapeTellsWholeArguments(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		pieces []string
		whole  bool
	}{
		{"an object", []string{`{"a":1}`}, true},
		{"in pieces", []string{`{"a"`, `:[1,`, `2]`, `}`}, true},
		{"not yet closed", []string{`{"a":{"b":1}`}, false},
		{"a bracket in a string", []string{`{"a":"}"`}, false},
		{"an escaped quote cut after its backslash", []string{`{"a":"x\`, `"}`}, false},
		{"an escaped quote, then the end", []string{`{"a":"x\`, `""}`}, true},
		{"an escaped backslash before the quote", []string{`{"a":"x\\`, `"}`}, true},
		{"nothing yet", nil, false},
		{"a closing bracket too many", []string{`}{}`}, false},
		{"an array", []string{`[1,`, `{"a":[]}]`}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var j jsonShape
			for _, p := range tc.pieces {
				j.read(p)
			}
			require.Equal(t, tc.whole, j.whole())
		})
	}
}

// TestEventWriterTakesWhiteSpaceAfterItsBlock: white space that follows whole
// arguments after their block stopped says nothing, and is not a malformed stream.
func TestEventWriterTakesWhiteSpaceAfterItsBlock(t *testing.T) {
	t.Parallel()
	got := surfaceEvents(t, []string{
		chunkHead + `"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"f","arguments":"{}"}}]}}]}`,
		chunkHead + `"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"g","arguments":"{}"}}]}}]}`,
		chunkHead + `"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\n"}}]}}]}`,
		chunkHead + `"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
	}, true)
	require.Equal(t, "message_stop", got[len(got)-1].typ)
}

// BenchmarkEventWriterLongHeldArguments: one long argument (a file a tool
// writes) streamed in 4-byte pieces while another call is held costs the same
// per piece however long it has grown.
func BenchmarkEventWriterLongHeldArguments(b *testing.B) {
	i0, i1, id0, id1, name, empty := int32(0), int32(1), "a", "b", "write", ""
	first := &pb.ChatCompletionChunk{Id: "x", Choices: []*pb.ChunkChoice{{Delta: &pb.ChatDelta{ToolCalls: []*pb.ToolCall{
		{Index: &i0, Id: &id0, Function: &pb.FunctionCall{Name: &name, Arguments: &empty}},
		{Index: &i1, Id: &id1, Function: &pb.FunctionCall{Name: &name, Arguments: &empty}}}}}}}
	pieces := []string{`{"content":"`}
	for n := 0; n < 25<<10; n += 4 {
		pieces = append(pieces, "abcd")
	}
	pieces = append(pieces, `"}`)
	chunks := make([]*pb.ChatCompletionChunk, len(pieces))
	for i := range pieces {
		chunks[i] = &pb.ChatCompletionChunk{Choices: []*pb.ChunkChoice{{Delta: &pb.ChatDelta{ToolCalls: []*pb.ToolCall{
			{Index: &i0, Function: &pb.FunctionCall{Arguments: &pieces[i]}}}}}}}
	}
	b.ReportAllocs()
	for b.Loop() {
		w := NewEventWriter("m", func(string, []byte) error { return nil })
		if err := w.Chunk(first); err != nil {
			b.Fatal(err)
		}
		for _, c := range chunks {
			if err := w.Chunk(c); err != nil {
				b.Fatal(err)
			}
		}
	}
}
