package anthropicjson

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/openaijson"
)

type sseEvent struct{ typ, data string }

// parseSSE reads a recorded transcript: "event: T" and "data: D" lines,
// events apart by blank lines.
func parseSSE(t testing.TB, transcript []byte) []sseEvent {
	t.Helper()
	var out []sseEvent
	for _, block := range strings.Split(strings.ReplaceAll(string(transcript), "\r\n", "\n"), "\n\n") {
		var e sseEvent
		for _, line := range strings.Split(block, "\n") {
			if v, ok := strings.CutPrefix(line, "event:"); ok {
				e.typ = strings.TrimSpace(v)
			}
			if v, ok := strings.CutPrefix(line, "data:"); ok {
				e.data = strings.TrimSpace(v)
			}
		}
		if e.data != "" {
			out = append(out, e)
		}
	}
	return out
}

// translate runs events through a translator and returns the chunks as the
// REST surface writes them (the data of each "data:" line).
func translate(t testing.TB, events []sseEvent, includeUsage bool) ([]string, *ChunkTranslator) {
	t.Helper()
	tr := NewChunkTranslator(includeUsage, testNow)
	var out []string
	for _, e := range events {
		chunks, err := tr.Translate(e.typ, []byte(e.data))
		require.NoError(t, err, "event %s", e.typ)
		for _, c := range chunks {
			out = append(out, string(openaijson.Marshal(c)))
		}
	}
	return out, tr
}

// accumulate feeds the chunks to the OpenAI Go SDK's accumulator, which must
// accept every one of them.
func accumulate(t testing.TB, chunks []string) *openai.ChatCompletionAccumulator {
	t.Helper()
	acc := &openai.ChatCompletionAccumulator{}
	for i, data := range chunks {
		var c openai.ChatCompletionChunk
		require.NoError(t, json.Unmarshal([]byte(data), &c))
		require.True(t, acc.AddChunk(c), "chunk %d refused: %s", i, data)
	}
	return acc
}

func TestChunkTranslatorRecordedStream(t *testing.T) {
	t.Parallel()
	events := parseSSE(t, recording(t, "messages_stream.txt"))
	head := `"id":"msg_01SJmPi7XXP8qscFQiHPR9oy","object":"chat.completion.chunk","created":1764590000,"model":"claude-sonnet-4-20250514"`
	for _, tc := range []struct {
		name         string
		includeUsage bool
		want         []string
	}{
		{"with usage", true, []string{
			`{` + head + `,"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`,
			`{` + head + `,"choices":[{"index":0,"delta":{"content":"Hello World"}}]}`,
			`{` + head + `,"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			`{` + head + `,"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":0,"cache_creation_tokens":0}}}`,
		}},
		{"without usage", false, []string{
			`{` + head + `,"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`,
			`{` + head + `,"choices":[{"index":0,"delta":{"content":"Hello World"}}]}`,
			`{` + head + `,"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			chunks, tr := translate(t, events, tc.includeUsage)
			require.True(t, tr.Complete())
			require.Len(t, chunks, len(tc.want))
			for i := range tc.want {
				require.JSONEq(t, tc.want[i], chunks[i], "chunk %d", i)
			}
			acc := accumulate(t, chunks)
			require.Equal(t, "msg_01SJmPi7XXP8qscFQiHPR9oy", acc.ID)
			require.Equal(t, "Hello World", acc.Choices[0].Message.Content)
			require.Equal(t, "stop", acc.Choices[0].FinishReason)
			if tc.includeUsage {
				require.EqualValues(t, 15, acc.Usage.TotalTokens)
			}
		})
	}
}

// A stream with thinking, text and two tool calls (Anthropic's framing as its
// documentation shows it), message_delta carrying the input and cache counts.
var toolStream = []sseEvent{
	{"message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}}`},
	{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me "}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"think."}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}`},
	{"content_block_stop", `{"type":"content_block_stop","index":0}`},
	{"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Checking."}}`},
	{"content_block_stop", `{"type":"content_block_stop","index":1}`},
	{"ping", `{"type":"ping"}`},
	{"content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_a","name":"get_weather","input":{}}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"location\": \"Pa"}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"ris\"}"}}`},
	{"content_block_stop", `{"type":"content_block_stop","index":2}`},
	{"content_block_start", `{"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_b","name":"now","input":{}}}`},
	{"content_block_stop", `{"type":"content_block_stop","index":3}`},
	{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":7,"cache_read_input_tokens":100,"cache_creation_input_tokens":3,"output_tokens":42}}`},
	{"message_stop", `{"type":"message_stop"}`},
}

func TestChunkTranslatorToolsAndThinking(t *testing.T) {
	t.Parallel()
	chunks, tr := translate(t, toolStream, true)
	require.True(t, tr.Complete())
	head := `"id":"msg_1","object":"chat.completion.chunk","created":1764590000,"model":"claude-x"`
	choice := func(delta string) string { return `{` + head + `,"choices":[{"index":0,"delta":` + delta + `}]}` }
	want := []string{
		choice(`{"role":"assistant","content":""}`),
		choice(`{"reasoning_content":"Let me "}`),
		choice(`{"reasoning_content":"think."}`),
		choice(`{"thinking_blocks":[{"type":"thinking","thinking":"Let me think.","signature":"EqQB"}]}`),
		choice(`{"content":"Checking."}`),
		choice(`{"tool_calls":[{"index":0,"id":"toolu_a","type":"function","function":{"name":"get_weather","arguments":""}}]}`),
		choice(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"location\": \"Pa"}}]}`),
		choice(`{"tool_calls":[{"index":0,"function":{"arguments":"ris\"}"}}]}`),
		choice(`{"tool_calls":[{"index":1,"id":"toolu_b","type":"function","function":{"name":"now","arguments":""}}]}`),
		// A call with no arguments gets {} at its block's end: JSON, as the
		// non-stream answer's (the SDKs parse them).
		choice(`{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]}`),
		`{` + head + `,"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`{` + head + `,"choices":[],"usage":{"prompt_tokens":110,"completion_tokens":42,"total_tokens":152,"prompt_tokens_details":{"cached_tokens":100,"cache_creation_tokens":3}}}`,
	}
	require.Len(t, chunks, len(want))
	for i := range want {
		require.JSONEq(t, want[i], chunks[i], "chunk %d", i)
	}

	acc := accumulate(t, chunks)
	msg := acc.Choices[0].Message
	require.Equal(t, "Checking.", msg.Content)
	require.Len(t, msg.ToolCalls, 2)
	require.Equal(t, "toolu_a", msg.ToolCalls[0].ID)
	require.Equal(t, "get_weather", msg.ToolCalls[0].Function.Name)
	require.JSONEq(t, `{"location":"Paris"}`, msg.ToolCalls[0].Function.Arguments)
	require.Equal(t, "toolu_b", msg.ToolCalls[1].ID)
	require.Equal(t, "now", msg.ToolCalls[1].Function.Name)
	require.Equal(t, "{}", msg.ToolCalls[1].Function.Arguments)
	require.Equal(t, "tool_calls", acc.Choices[0].FinishReason)
	require.EqualValues(t, 100, acc.Usage.PromptTokensDetails.CachedTokens)

	var reasoning strings.Builder
	for _, c := range chunks {
		var d struct {
			Choices []struct {
				Delta struct {
					Reasoning *string `json:"reasoning_content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal([]byte(c), &d))
		if len(d.Choices) > 0 && d.Choices[0].Delta.Reasoning != nil {
			reasoning.WriteString(*d.Choices[0].Delta.Reasoning)
		}
	}
	require.Equal(t, "Let me think.", reasoning.String())
}

// The stream and the whole message it builds translate to the same answer.
func TestStreamAgreesWithCompletion(t *testing.T) {
	t.Parallel()
	chunks, _ := translate(t, toolStream, true)
	acc := accumulate(t, chunks)
	whole := `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[
		{"type":"thinking","thinking":"Let me think.","signature":"EqQB"},{"type":"text","text":"Checking."},
		{"type":"tool_use","id":"toolu_a","name":"get_weather","input":{"location": "Paris"}},{"type":"tool_use","id":"toolu_b","name":"now","input":{}}],
		"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":7,"cache_read_input_tokens":100,"cache_creation_input_tokens":3,"output_tokens":42}}`
	c, err := ToCompletionAt([]byte(whole), testNow)
	require.NoError(t, err)
	var fromWhole openai.ChatCompletion
	require.NoError(t, json.Unmarshal(openaijson.Marshal(c), &fromWhole))
	got, want := acc.Choices[0], fromWhole.Choices[0]
	require.Equal(t, want.Message.Content, got.Message.Content)
	require.Equal(t, want.FinishReason, got.FinishReason)
	require.Len(t, got.Message.ToolCalls, len(want.Message.ToolCalls))
	for i := range want.Message.ToolCalls {
		require.Equal(t, want.Message.ToolCalls[i].ID, got.Message.ToolCalls[i].ID)
		require.Equal(t, want.Message.ToolCalls[i].Function.Name, got.Message.ToolCalls[i].Function.Name)
		require.JSONEq(t, want.Message.ToolCalls[i].Function.Arguments, compactOr(got.Message.ToolCalls[i].Function.Arguments))
	}
	require.Equal(t, fromWhole.Usage.PromptTokens, acc.Usage.PromptTokens)
	require.Equal(t, fromWhole.Usage.CompletionTokens, acc.Usage.CompletionTokens)
	require.Equal(t, fromWhole.Usage.PromptTokensDetails.CachedTokens, acc.Usage.PromptTokensDetails.CachedTokens)
}

// compactOr is args compacted (as they are when not JSON).
func compactOr(args string) string {
	var b bytes.Buffer
	if json.Compact(&b, []byte(args)) != nil {
		return args
	}
	return b.String()
}

// The matched stop sequence is the finish chunk's stop_reason, as ToCompletion
// gives it on the choice.
func TestChunkTranslatorKeepsTheStopSequence(t *testing.T) {
	t.Parallel()
	events := []sseEvent{
		{"message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}}`},
		{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"1, 2, 3"}}`},
		{"content_block_stop", `{"type":"content_block_stop","index":0}`},
		{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"stop_sequence","stop_sequence":"END"},"usage":{"output_tokens":5}}`},
		{"message_stop", `{"type":"message_stop"}`},
	}
	chunks, _ := translate(t, events, false)
	head := `"id":"msg_1","object":"chat.completion.chunk","created":1764590000,"model":"claude-x"`
	require.JSONEq(t, `{`+head+`,"choices":[{"index":0,"delta":{},"finish_reason":"stop","stop_reason":"END"}]}`, chunks[len(chunks)-1])

	c, err := ToCompletionAt([]byte(`{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"1, 2, 3"}],`+
		`"stop_reason":"stop_sequence","stop_sequence":"END","usage":{"input_tokens":5,"output_tokens":5}}`), testNow)
	require.NoError(t, err)
	require.Equal(t, "END", c.GetChoices()[0].GetExtra().GetFields()["stop_reason"].GetStringValue())
}

func TestChunkTranslatorRedactedThinking(t *testing.T) {
	t.Parallel()
	events := []sseEvent{
		toolStream[0],
		{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"EmwK"}}`},
		{"content_block_stop", `{"type":"content_block_stop","index":0}`},
		{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}`},
		{"message_stop", `{"type":"message_stop"}`},
	}
	chunks, tr := translate(t, events, false)
	require.True(t, tr.Complete())
	require.Len(t, chunks, 3)
	require.JSONEq(t, `{"id":"msg_1","object":"chat.completion.chunk","created":1764590000,"model":"claude-x","choices":[{"index":0,"delta":{"thinking_blocks":[{"type":"redacted_thinking","data":"EmwK"}]}}]}`, chunks[1])
	require.JSONEq(t, `{"id":"msg_1","object":"chat.completion.chunk","created":1764590000,"model":"claude-x","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, chunks[2])
}

func TestChunkTranslatorFailures(t *testing.T) {
	t.Parallel()
	start := toolStream[0]
	textStart := sseEvent{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`}
	for _, tc := range []struct {
		name   string
		events []sseEvent
		want   error
	}{
		{"error event", []sseEvent{start, {"error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`}}, &APIError{Type: "overloaded_error", Message: "Overloaded"}},
		{"error before message_start", []sseEvent{{"error", `{"type":"error","error":{"type":"api_error","message":"boom"}}`}}, &APIError{Type: "api_error", Message: "boom"}},
		{"not JSON", []sseEvent{start, {"content_block_delta", `{"type":`}}, ErrMalformed},
		{"delta before message_start", []sseEvent{textStart}, ErrMalformed},
		{"two message_starts", []sseEvent{start, start}, ErrMalformed},
		{"delta of a block never started", []sseEvent{start, {"content_block_delta", `{"type":"content_block_delta","index":4,"delta":{"type":"text_delta","text":"x"}}`}}, ErrMalformed},
		{"block started twice", []sseEvent{start, textStart, textStart}, ErrMalformed},
		{"stop of a block never started", []sseEvent{start, {"content_block_stop", `{"type":"content_block_stop","index":0}`}}, ErrMalformed},
		{"input_json_delta on a text block", []sseEvent{start, textStart, {"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{"}}`}}, ErrMalformed},
		{"event after message_stop", []sseEvent{start, {"message_stop", `{"type":"message_stop"}`}, textStart}, ErrMalformed},
		{"wrong shape", []sseEvent{start, {"message_delta", `{"type":"message_delta","delta":[]}`}}, ErrMalformed},
		// Anthropic gives the stop_reason before message_stop: no finish is made up.
		{"message_stop before a stop_reason", []sseEvent{start, {"message_stop", `{"type":"message_stop"}`}}, ErrMalformed},
		{"message_stop after a null stop_reason", []sseEvent{start,
			{"message_delta", `{"type":"message_delta","delta":{"stop_reason":null},"usage":{"output_tokens":0}}`},
			{"message_stop", `{"type":"message_stop"}`}}, ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tr := NewChunkTranslator(true, testNow)
			var err error
			for _, e := range tc.events {
				if _, err = tr.Translate(e.typ, []byte(e.data)); err != nil {
					break
				}
			}
			if ae, ok := tc.want.(*APIError); ok {
				var got *APIError
				require.ErrorAs(t, err, &got)
				require.Equal(t, ae, got)
				return
			}
			require.ErrorIs(t, err, tc.want)
		})
	}
}

// A stream cut before message_stop is not complete, and the chunks so far are
// what a client already got.
func TestChunkTranslatorIncomplete(t *testing.T) {
	t.Parallel()
	events := parseSSE(t, recording(t, "messages_stream.txt"))
	for cut := range events {
		_, tr := translate(t, events[:cut], true)
		require.False(t, tr.Complete(), "cut at %d", cut)
	}
}

// Unknown event types and block types give nothing (Anthropic asks clients to
// ignore what they do not know).
func TestChunkTranslatorIgnoresWhatItDoesNotKnow(t *testing.T) {
	t.Parallel()
	tr := NewChunkTranslator(false, testNow)
	for _, e := range []sseEvent{
		toolStream[0],
		{"future_event", `{"type":"future_event","x":1}`},
		{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"s","name":"web_search","input":{}}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{}"}}`},
		{"content_block_stop", `{"type":"content_block_stop","index":0}`},
		{"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"citations_delta","citation":{"type":"char_location"}}}`},
	} {
		chunks, err := tr.Translate(e.typ, []byte(e.data))
		require.NoError(t, err)
		if e.typ != "message_start" {
			require.Empty(t, chunks, e.data)
		}
	}
}
