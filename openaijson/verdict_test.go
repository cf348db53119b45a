package openaijson_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/openaijson"
)

// InspectChunk (the REST relay's check) and UnmarshalChunk (the gRPC stream's
// decode) give one verdict, and the same error, for every chunk: the REST relay
// must not pass on raw what the gRPC stream refuses.
func TestInspectChunkGivesUnmarshalChunksVerdict(t *testing.T) {
	t.Parallel()
	head := `{"id":"x","object":"chat.completion.chunk","created":1,"model":"m",`
	cases := []struct {
		name, chunk, err string
	}{
		{"created a bool", `{"id":"x","object":"o","created":true,"model":"m","choices":[]}`, "invalid value for 'created': expected an integer"},
		{"delta a number", head + `"choices":[{"index":0,"delta":5}]}`, "invalid value for 'choices[0].delta': expected an object"},
		{"index a fraction", head + `"choices":[{"index":1.5,"delta":{}}]}`, "invalid value for 'choices[0].index': expected an integer"},
		{"id a number", `{"id":5,"choices":[]}`, "invalid value for 'id': expected a string"},
		{"content a number", head + `"choices":[{"index":0,"delta":{"content":1}}]}`, "invalid value for 'choices[0].delta.content': expected a string"},
		{"null choice", head + `"choices":[null]}`, "invalid value for 'choices[0]': expected an object"},
		{"logprobs a list", head + `"choices":[{"index":0,"delta":{},"logprobs":[]}]}`, "invalid value for 'choices[0].logprobs': expected an object"},
		{"usage tokens a string", head + `"choices":[],"usage":{"prompt_tokens":"1"}}`, "invalid value for 'usage.prompt_tokens': expected an integer"},
		{"tool call index too big", head + `"choices":[{"index":0,"delta":{"tool_calls":[{"index":9999999999}]}}]}`,
			"invalid value for 'choices[0].delta.tool_calls[0].index': integer out of range"},
		{"number past float64", head + `"choices":[],"x":1e400}`, "invalid value for 'x': number out of range"},
		{"integral float index", head + `"choices":[{"index":1.0,"delta":{}}]}`, ""},
		{"null members", `{"id":null,"created":null,"choices":null,"usage":null,"system_fingerprint":null}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, inspectErr := openaijson.InspectChunk([]byte(c.chunk))
			decodeErr := openaijson.UnmarshalChunk([]byte(c.chunk), &pb.ChatCompletionChunk{})
			if c.err == "" {
				require.NoError(t, decodeErr)
				require.NoError(t, inspectErr)
				return
			}
			require.EqualError(t, decodeErr, c.err)
			require.EqualError(t, inspectErr, c.err)
		})
	}
}

// The inspectors know every field of every message in what they inspect: each
// field, given values of every JSON type, gets the decoder's verdict (a field an
// inspector did not know would pass as an unknown member, whatever its type).
// InspectChunk gives UnmarshalChunk's error too; InspectCompletion only its
// verdict (on a refusal the answer is decoded, which names the member).
func TestInspectorsCheckEveryField(t *testing.T) {
	t.Parallel()
	values := []string{`null`, `"s"`, `""`, `1`, `-1`, `1.5`, `1.0`, `99999999999`, `true`, `{}`, `[]`, `[{}]`, `[null]`, `[1]`, `{"a":1e400}`, `"\ud83d"`}
	cases := []struct {
		name     string
		messages []proto.Message
		wrap     map[string][2]string // where a member of each message goes
		check    func(t *testing.T, body []byte)
	}{
		{
			name:     "chunk",
			messages: []proto.Message{&pb.ChatCompletionChunk{}, &pb.ChunkChoice{}, &pb.ChatDelta{}, &pb.ToolCall{}, &pb.FunctionCall{}, &pb.Usage{}},
			wrap: map[string][2]string{
				"ChatCompletionChunk": {`{`, `}`},
				"ChunkChoice":         {`{"choices":[{`, `}]}`},
				"ChatDelta":           {`{"choices":[{"delta":{`, `}}]}`},
				"ToolCall":            {`{"choices":[{"delta":{"tool_calls":[{`, `}]}}]}`},
				"FunctionCall":        {`{"choices":[{"delta":{"tool_calls":[{"function":{`, `}}]}}]}`},
				"Usage":               {`{"usage":{`, `}}`},
			},
			check: func(t *testing.T, body []byte) {
				_, inspectErr := openaijson.InspectChunk(body)
				if decodeErr := openaijson.UnmarshalChunk(body, &pb.ChatCompletionChunk{}); decodeErr != nil {
					require.EqualError(t, inspectErr, decodeErr.Error(), "%s", body)
					return
				}
				require.NoError(t, inspectErr, "%s", body)
			},
		},
		{
			name:     "completion",
			messages: []proto.Message{&pb.ChatCompletion{}, &pb.Choice{}, &pb.ChatMessage{}, &pb.ToolCall{}, &pb.FunctionCall{}, &pb.Usage{}},
			wrap: map[string][2]string{
				"ChatCompletion": {`{`, `}`},
				"Choice":         {`{"choices":[{`, `}]}`},
				"ChatMessage":    {`{"choices":[{"message":{`, `}}]}`},
				"ToolCall":       {`{"choices":[{"message":{"tool_calls":[{`, `}]}}]}`},
				"FunctionCall":   {`{"choices":[{"message":{"tool_calls":[{"function":{`, `}}]}}]}`},
				"Usage":          {`{"usage":{`, `}}`},
			},
			check: func(t *testing.T, body []byte) {
				_, inspectErr := openaijson.InspectCompletion(body)
				decodeErr := openaijson.UnmarshalCompletion(body, &pb.ChatCompletion{})
				require.Equal(t, decodeErr == nil, inspectErr == nil, "%s: decode error %v, inspect error %v", body, decodeErr, inspectErr)
			},
		},
	}
	for _, tc := range cases {
		for _, m := range tc.messages {
			md := m.ProtoReflect().Descriptor()
			w := tc.wrap[string(md.Name())]
			require.NotEmpty(t, w[0], md.Name())
			for i := range md.Fields().Len() {
				name := string(md.Fields().Get(i).Name())
				t.Run(tc.name+"/"+string(md.Name())+"."+name, func(t *testing.T) {
					for _, v := range append(values, `{"`+name+`":1}`) {
						tc.check(t, []byte(w[0]+`"`+name+`":`+v+w[1]))
					}
				})
			}
		}
	}
}
