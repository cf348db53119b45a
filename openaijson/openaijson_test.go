package openaijson_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/openaijson"
)

func TestRequestRoundTripKeepsUnknownMembers(t *testing.T) {
	t.Parallel()
	in := `{"model":"up/gpt-4o","messages":[{"role":"user","content":"hi","cache_control":{"type":"ephemeral"}},
	 {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}],
	 "temperature":0,"seed":9007199254740991,"stop":["a","b"],"top_k":40,"vendor":{"x":[1,2.5,"s"]},
	 "logit_bias":{"50256":-100},"stream":true,"stream_options":{"include_usage":true}}`
	var req pb.ChatCompletionRequest
	require.NoError(t, openaijson.Unmarshal([]byte(in), &req))
	require.Equal(t, "up/gpt-4o", req.GetModel())
	require.NotNil(t, req.Temperature)
	require.Equal(t, int64(9007199254740991), req.GetSeed())
	require.Equal(t, float64(40), req.GetExtra().GetFields()["top_k"].GetNumberValue())

	out := openaijson.Marshal(&req)
	require.JSONEq(t, in, string(out))
}

func TestResponseWritesOpenAIShapes(t *testing.T) {
	t.Parallel()
	finish := "stop"
	resp := &pb.ChatCompletion{Id: "x", Object: "chat.completion", Created: 1795997379, Model: "m",
		Choices: []*pb.Choice{{Index: 0, FinishReason: &finish, Message: &pb.ChatMessage{Role: "assistant"}}},
		Usage:   &pb.Usage{}}
	var got map[string]any
	require.NoError(t, json.Unmarshal(openaijson.Marshal(resp), &got))
	require.Equal(t, float64(1795997379), got["created"], "created is a number")
	choice := got["choices"].([]any)[0].(map[string]any)
	require.Contains(t, choice, "index")
	require.NotContains(t, choice, "logprobs")
	require.Equal(t, float64(0), got["usage"].(map[string]any)["total_tokens"])

	chunk := &pb.ChatCompletionChunk{Id: "x", Usage: &pb.Usage{TotalTokens: 3}}
	require.NoError(t, json.Unmarshal(openaijson.Marshal(chunk), &got))
	require.Equal(t, []any{}, got["choices"], "usage chunk carries empty choices")
}

func TestDecodeErrorsNameTheParam(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, body, param string }{
		{"model not a string", `{"model": 3}`, "model"},
		{"temperature not a number", `{"temperature": "hot"}`, "temperature"},
		{"role not a string", `{"messages": [{"role": 1}]}`, "messages[0].role"},
		{"messages not an array", `{"messages": {}}`, "messages"},
		{"fractional n", `{"n": 1.5}`, "n"},
		{"max_tokens out of range", `{"max_tokens": 99999999999}`, "max_tokens"},
		{"stream not a bool", `{"stream": "yes"}`, "stream"},
		{"not an object", `[1]`, ""},
		{"truncated", `{"model": "x"`, ""},
		{"empty body", ``, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var req pb.ChatCompletionRequest
			err := openaijson.Unmarshal([]byte(c.body), &req)
			var de *openaijson.Error
			require.ErrorAs(t, err, &de, c.body)
			require.Equal(t, c.param, de.Param, c.body)
		})
	}
}

func TestStringEscaping(t *testing.T) {
	t.Parallel()
	s := "quote\" back\\ nl\n tab\t ctl\x01 bad\xff ok é \u2028"
	msg := &pb.ChatMessage{Role: s}
	var got map[string]any
	require.NoError(t, json.Unmarshal(openaijson.Marshal(msg), &got))
	require.Equal(t, "quote\" back\\ nl\n tab\t ctl\x01 bad\ufffd ok é \u2028", got["role"])
}

func TestInspectChunk(t *testing.T) {
	t.Parallel()
	head := `{"id":"x","object":"chat.completion.chunk","created":1,"model":"m",`
	cases := []struct {
		name  string
		chunk string
		want  openaijson.ChunkInfo
	}{
		{"content delta", head + `"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}`, openaijson.ChunkInfo{Complete: true, Choices: 1, Content: true}},
		{"finish reason", head + `"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, openaijson.ChunkInfo{Complete: true, Finished: true, Choices: 1, Content: true}},
		{"finish on a non-zero index", head + `"choices":[{"index":1,"delta":{},"finish_reason":"stop"}]}`,
			openaijson.ChunkInfo{Complete: true, Finished: true, Choices: 1, NonZeroIndex: true, Content: true}},
		{"empty role delta", head + `"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null}}]}`, openaijson.ChunkInfo{Complete: true, Choices: 1}},
		{"refusal", head + `"choices":[{"index":0,"delta":{"refusal":"no"}}]}`, openaijson.ChunkInfo{Complete: true, Choices: 1, Content: true}},
		{"reasoning_content", head + `"choices":[{"index":0,"delta":{"reasoning_content":"hm"}}]}`, openaijson.ChunkInfo{Complete: true, Choices: 1, Content: true}},
		{"repeated reasoning, the last empty", head + `"choices":[{"index":0,"delta":{"reasoning":"hm","reasoning":""}}]}`, openaijson.ChunkInfo{Complete: true, Choices: 1}},
		{"non-string reasoning and empty tool_calls", head + `"choices":[{"index":0,"delta":{"reasoning_content":7,"tool_calls":[]}}]}`, openaijson.ChunkInfo{Complete: true, Choices: 1}},
		{"tool call", head + `"choices":[{"index":0,"delta":{"tool_calls":[{"index":0}]}}]}`, openaijson.ChunkInfo{Complete: true, Choices: 1, Content: true}},
		{"repeated delta, the last empty", head + `"choices":[{"index":0,"delta":{"content":"a"},"delta":{}}]}`, openaijson.ChunkInfo{Complete: true, Choices: 1}},
		{"two choices", head + `"choices":[{"index":0,"delta":{}},{"index":1,"delta":{}}]}`, openaijson.ChunkInfo{Complete: true, Choices: 2, NonZeroIndex: true}},
		{"repeated choices, the last kept", head + `"choices":[{"index":1,"delta":{}}],"choices":[{"index":0,"delta":{}}]}`, openaijson.ChunkInfo{Complete: true, Choices: 1}},
		{"repeated index, the last kept", head + `"choices":[{"index":1,"index":0,"delta":{}}]}`, openaijson.ChunkInfo{Complete: true, Choices: 1}},
		{"usage only", head + `"choices":[],"usage":{"prompt_tokens":17,"completion_tokens":4,"total_tokens":21}}`,
			openaijson.ChunkInfo{Complete: true, Usage: true, UsageOnly: true, PromptTokens: 17, CompletionTokens: 4, TotalTokens: 21}},
		{"usage with repeated cached_tokens and string reasoning_tokens", head + `"choices":[],"usage":{"prompt_tokens":17,"completion_tokens":4,"total_tokens":21,` +
			`"prompt_tokens_details":{"cached_tokens":2,"audio_tokens":0,"cached_tokens":9.7},"completion_tokens_details":{"reasoning_tokens":"3"}}}`,
			openaijson.ChunkInfo{Complete: true, Usage: true, UsageOnly: true, PromptTokens: 17, CompletionTokens: 4, TotalTokens: 21, CachedTokens: 9}},
		{"usage with null and out-of-range details", head + `"choices":[],"usage":{"prompt_tokens_details":null,"completion_tokens_details":{"reasoning_tokens":1e40,"x":[{"reasoning_tokens":5}]}}}`,
			openaijson.ChunkInfo{Complete: true, Usage: true, UsageOnly: true}},
		{"repeated usage, the last kept", head + `"choices":[],"usage":{"total_tokens":7,"prompt_tokens_details":{"cached_tokens":3},` +
			`"completion_tokens_details":{"reasoning_tokens":2}},"usage":{"prompt_tokens":1}}`,
			openaijson.ChunkInfo{Complete: true, Usage: true, UsageOnly: true, PromptTokens: 1}},
		{"cached_tokens above int32", head + `"choices":[],"usage":{"prompt_tokens_details":{"cached_tokens":3000000000}}}`,
			openaijson.ChunkInfo{Complete: true, Usage: true, UsageOnly: true, CachedTokens: 3000000000}},
		{"negative reasoning_tokens with exponent", head + `"choices":[],"usage":{"completion_tokens_details":{"reasoning_tokens":-0.5e1}}}`,
			openaijson.ChunkInfo{Complete: true, Usage: true, UsageOnly: true, ReasoningTokens: -5}},
		{"choice without index", head + `"choices":[{"delta":{}}]}`, openaijson.ChunkInfo{Choices: 1}},
		{"no envelope", `{"choices":[{"index":0,"delta":{}}]}`, openaijson.ChunkInfo{Choices: 1}},
		{"error", `{"error":{"message":"x"}}`, openaijson.ChunkInfo{Error: true}},
		{"invalid UTF-8 content", head + `"choices":[{"index":0,"delta":{"content":"h` + "\xff" + `i"}}]}`, openaijson.ChunkInfo{Choices: 1, Content: true}}, // decoding mends it
		{"lone surrogate escape", head + `"choices":[{"index":0,"delta":{"content":"\ud800"}}]}`, openaijson.ChunkInfo{Choices: 1, Content: true}},
		{"surrogate pair and escaped backslash", head + `"choices":[{"index":0,"delta":{"content":"\ud83d\ude00 \\ud800 \u00e9"}}]}`, openaijson.ChunkInfo{Complete: true, Choices: 1, Content: true}}, // a pair, an escaped backslash, é
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := openaijson.InspectChunk([]byte(c.chunk))
			require.NoError(t, err, c.chunk)
			require.Equal(t, c.want, got, c.chunk)
		})
	}
	for _, bad := range []string{`{"choices":[{"index":0}`, `{"a":1}x`, `[]`, `{"choices":[1]}`} {
		_, err := openaijson.InspectChunk([]byte(bad))
		require.Error(t, err, bad)
	}
}

func TestUnmarshalChunkMatchesUnmarshalOnTheCorpus(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"chat_completion_stream.txt", "openai_tool_call_stream.txt", "groq_chat_completion_stream.txt", "xai_chat_completion_stream.txt"} {
		raw, err := os.ReadFile("../internal/fakeupstream/testdata/" + file)
		require.NoError(t, err)
		n := 0
		for _, line := range strings.Split(string(raw), "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok || data == "[DONE]" {
				continue
			}
			var fast, generic pb.ChatCompletionChunk
			require.NoError(t, openaijson.UnmarshalChunk([]byte(data), &fast))
			require.NoError(t, openaijson.Unmarshal([]byte(data), &generic))
			require.True(t, proto.Equal(&fast, &generic), "%s: %s", file, data)
			n++
		}
		require.Positive(t, n)
	}
}

func TestUnmarshalCompletionMatchesUnmarshalOnTheCorpus(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"chat_completion.json", "chat_with_tools.json", "groq_chat_with_tools.json"} {
		raw, err := os.ReadFile("../internal/fakeupstream/testdata/" + file)
		require.NoError(t, err)
		var fast, generic pb.ChatCompletion
		require.NoError(t, openaijson.UnmarshalCompletion(raw, &fast))
		require.NoError(t, openaijson.Unmarshal(raw, &generic))
		require.True(t, proto.Equal(&fast, &generic), file)
	}
}
