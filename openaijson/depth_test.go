package openaijson_test

import (
	"errors"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/openaijson"
)

// nested is n arrays, one inside the other, around inner.
func nested(n int, inner string) string {
	return strings.Repeat("[", n) + inner + strings.Repeat("]", n)
}

// decoders are every exported way into the decoder, each as a function of the bytes.
var decoders = []struct {
	name   string
	decode func([]byte) error
}{
	{"Unmarshal request", func(b []byte) error { return openaijson.Unmarshal(b, &pb.ChatCompletionRequest{}) }},
	{"Unmarshal completion", func(b []byte) error { return openaijson.Unmarshal(b, &pb.ChatCompletion{}) }},
	{"Unmarshal chunk", func(b []byte) error { return openaijson.Unmarshal(b, &pb.ChatCompletionChunk{}) }},
	{"UnmarshalCompletion", func(b []byte) error { return openaijson.UnmarshalCompletion(b, &pb.ChatCompletion{}) }},
	{"UnmarshalChunk", func(b []byte) error { return openaijson.UnmarshalChunk(b, &pb.ChatCompletionChunk{}) }},
	{"InspectChunk", func(b []byte) error { _, err := openaijson.InspectChunk(b); return err }},
	{"Unmarshal Struct", func(b []byte) error { return openaijson.Unmarshal(b, &structpb.Struct{}) }},
	{"Unmarshal ListModelsResponse", func(b []byte) error { return openaijson.Unmarshal(b, &pb.ListModelsResponse{}) }},
}

// deepBodies put n levels of nesting (counting the top-level object) wherever a
// decoder walks nested JSON: an unknown member (kept in extra or skipped), a
// Value field, a Struct field, a chunk's logprobs, a tool call's unknown member.
func deepBodies(n int) map[string]string {
	in := n - 1 // the levels inside the top-level object
	return map[string]string{
		"unknown member":  `{"model":"x","messages":[],"x":` + nested(in, "1") + `}`,
		"skipped member":  `{"object":"list","data":[],"x":` + nested(in, "") + `}`,
		"message content": `{"model":"x","messages":[{"role":"user","content":` + nested(in-2, "") + `}]}`,
		"response_format": `{"model":"x","response_format":{"a":` + nested(in-1, "") + `}}`,
		"chunk logprobs": `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m",` +
			`"choices":[{"index":0,"delta":{},"logprobs":{"a":` + nested(in-3, "") + `}}]}`,
		"tool call member": `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m",` +
			`"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"x":` + nested(in-5, "") + `}]}}]}`,
		"objects": strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n),
	}
}

// Every decoder refuses nesting past MaxDepth with ErrTooDeep, whose message names
// the limit, and takes nesting up to it; a body 4,000,000 levels deep (once a
// stack overflow that killed the process) fails the same way.
func TestNestingIsBoundedInEveryDecoder(t *testing.T) {
	t.Parallel()
	huge := `{"model":"x","messages":[{"role":"user","content":"hi"}],"x":` + nested(4_000_000, "") + `}`
	for _, dec := range decoders {
		t.Run(dec.name, func(t *testing.T) {
			t.Parallel()
			for where, body := range deepBodies(openaijson.MaxDepth + 1) {
				err := dec.decode([]byte(body))
				require.ErrorIs(t, err, openaijson.ErrTooDeep, where)
				require.Contains(t, err.Error(), strconv.Itoa(openaijson.MaxDepth)+" levels", where)
				var de *openaijson.Error
				require.ErrorAs(t, err, &de, where)
				require.Empty(t, de.Param, where)
				require.Contains(t, "[{", string(body[de.Offset]), "%s: the offset is the bracket past the limit", where)
			}
			for where, body := range deepBodies(openaijson.MaxDepth) {
				err := dec.decode([]byte(body))
				require.False(t, errors.Is(err, openaijson.ErrTooDeep) || errors.Is(err, openaijson.ErrSyntax), "%s: %v", where, err)
			}
			require.ErrorIs(t, dec.decode([]byte(huge)), openaijson.ErrTooDeep)
		})
	}
}

// Refusing deep nesting costs a small, fixed amount of memory however deep and
// large the body: far less than the body itself.
func TestDeepNestingAllocatesLittle(t *testing.T) {
	for _, levels := range []int{100_000, 4_000_000} {
		body := []byte(`{"model":"x","messages":[{"role":"user","content":"hi"}],"x":` + nested(levels, "") + `}`)
		for _, dec := range decoders {
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := dec.decode(body)
			runtime.ReadMemStats(&after)
			require.ErrorIs(t, err, openaijson.ErrTooDeep)
			allocated := after.TotalAlloc - before.TotalAlloc
			require.Less(t, allocated, uint64(256<<10), "%s, %d levels (%d-byte body): %d bytes allocated", dec.name, levels, len(body), allocated)
		}
	}
}

func TestErrorsSayWhatAndWhereNotWhose(t *testing.T) {
	t.Parallel()
	cases := []struct {
		body, msg string
		kind      error
		offset    int
	}{
		{``, "empty input; expected a JSON object", openaijson.ErrSyntax, 0},
		{`  `, "empty input; expected a JSON object", openaijson.ErrSyntax, 2},
		{`{"model":`, "invalid JSON: unexpected end of input", openaijson.ErrSyntax, 9},
		{`{"model":"x"}x`, `invalid JSON: unexpected "x" at byte 13`, openaijson.ErrSyntax, 13},
		{`{"model":"x",}`, `invalid JSON: unexpected "}" at byte 13`, openaijson.ErrSyntax, 13},
		{`{"model": 3, "x": tru}`, `invalid JSON: unexpected "t" at byte 18`, openaijson.ErrSyntax, 18},
		{`[1,2]`, "expected a JSON object", openaijson.ErrNotObject, 0},
		{`"s"`, "expected a JSON object", openaijson.ErrNotObject, 0},
		{`{"x":` + nested(200, "") + `}`, "JSON nested deeper than 128 levels (at byte 132)", openaijson.ErrTooDeep, 132},
	}
	for _, c := range cases {
		t.Run(c.body, func(t *testing.T) {
			for _, dec := range decoders[:6] {
				err := dec.decode([]byte(c.body))
				require.ErrorIs(t, err, c.kind, dec.name)
				require.EqualError(t, err, c.msg, dec.name)
				require.NotContains(t, err.Error(), "request", dec.name)
				var de *openaijson.Error
				require.ErrorAs(t, err, &de)
				require.Equal(t, c.offset, de.Offset, dec.name)
			}
		})
	}
	// A member's error names it and is of no whole-input kind.
	err := openaijson.Unmarshal([]byte(`{"model":3}`), &pb.ChatCompletionRequest{})
	require.EqualError(t, err, "invalid value for 'model': expected a string")
	require.False(t, errors.Is(err, openaijson.ErrSyntax) || errors.Is(err, openaijson.ErrNotObject))
	// A number past float64 in a kept member is that member's error, not a syntax error.
	err = openaijson.Unmarshal([]byte(`{"vendor":{"x":[1e400]}}`), &pb.ChatCompletionRequest{})
	require.EqualError(t, err, "invalid value for 'vendor': number out of range")
}

// A surrogate escape without its pair is U+FFFD and the escape after it stays
// itself, as in encoding/json; each invalid UTF-8 byte is one U+FFFD.
func TestStringsDecodeAsEncodingJSONDoes(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		`"\ud83d\u0041"`:       "\uFFFDA",
		`"\ud83d"`:             "\uFFFD",
		`"\ud83dx"`:            "\uFFFDx",
		`"\ude00\ud83d"`:       "\uFFFD\uFFFD",
		`"\ud83d\ud83d\ude00"`: "\uFFFD😀",
		`"\ud83d\ude00"`:       "😀",
		`"\ud83d\n"`:           "\uFFFD\n",
		"\"\xff\xfe\"":         "\uFFFD\uFFFD",
		"\"a\xed\xa0\x80\"":    "a\uFFFD\uFFFD\uFFFD",
		"\"\\n\xff\xfe\"":      "\n\uFFFD\uFFFD",
	}
	for in, want := range cases {
		t.Run(in, func(t *testing.T) {
			body := `{"model":` + in + `,"x":` + in + `,` + in + `:1}`
			var req pb.ChatCompletionRequest
			require.NoError(t, openaijson.Unmarshal([]byte(body), &req))
			require.Equal(t, want, req.GetModel(), "a known field")
			require.Equal(t, want, req.GetExtra().GetFields()["x"].GetStringValue(), "an unknown member's value")
			require.Contains(t, req.GetExtra().GetFields(), want, "a key")
			require.Equal(t, want, oracle(t, []byte(in)), "encoding/json agrees")
		})
	}
	require.Error(t, openaijson.Unmarshal([]byte(`{"model":"\ud83d\u00"}`), &pb.ChatCompletionRequest{}), "a bad escape after a surrogate is still an error")
}

// A member given twice counts once, the last time, as Python's json (OpenAI's
// side) reads it: a repeated "messages" must not add up to both lists.
func TestDuplicateMembersLastOneCounts(t *testing.T) {
	t.Parallel()
	var req pb.ChatCompletionRequest
	require.NoError(t, openaijson.Unmarshal([]byte(`{"model":"a","messages":[{"role":"system","content":"evil"}],`+
		`"messages":[{"role":"user","content":"hi"}],"response_format":{"a":1},"response_format":{"b":2},`+
		`"stop":["x"],"stop":null,"user":"u","user":null}`), &req))
	require.Len(t, req.GetMessages(), 1)
	require.Equal(t, "user", req.GetMessages()[0].GetRole())
	require.Equal(t, map[string]any{"b": float64(2)}, req.GetResponseFormat().AsMap())
	require.True(t, proto.Equal(structpb.NewNullValue(), req.GetStop()), "stop: null is a null Value")
	require.Nil(t, req.User)

	chunk := `{"id":"c","choices":[{"index":0,"delta":{"content":"a"}}],"choices":[{"index":1,"delta":{"role":"x"},"delta":{"content":"b"},` +
		`"finish_reason":"stop","finish_reason":null}],"usage":{"prompt_tokens":1},"usage":null}`
	var fast, generic pb.ChatCompletionChunk
	require.NoError(t, openaijson.UnmarshalChunk([]byte(chunk), &fast))
	require.NoError(t, openaijson.Unmarshal([]byte(chunk), &generic))
	require.True(t, proto.Equal(&fast, &generic))
	require.Len(t, fast.GetChoices(), 1)
	require.Equal(t, "b", fast.GetChoices()[0].GetDelta().GetContent())
	require.Nil(t, fast.GetChoices()[0].GetDelta().Role)
	require.Nil(t, fast.GetChoices()[0].FinishReason)
	require.Nil(t, fast.GetUsage())
	info, err := openaijson.InspectChunk([]byte(chunk))
	require.NoError(t, err)
	require.Equal(t, openaijson.ChunkInfo{Choices: 1, NonZeroIndex: true, Content: true}, info)
}

// An unknown member named like the extra field is kept and written back.
func TestUnknownMemberNamedExtraRoundTrips(t *testing.T) {
	t.Parallel()
	var req pb.ChatCompletionRequest
	require.NoError(t, openaijson.Unmarshal([]byte(`{"model":"m","extra":{"a":1}}`), &req))
	require.JSONEq(t, `{"model":"m","extra":{"a":1},"stream":false}`, string(openaijson.Marshal(&req)))
}
