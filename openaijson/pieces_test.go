package openaijson_test

import (
	"bytes"
	"testing"
	"unicode/utf8"
	"unsafe"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/openaijson"
)

// TestAppendPiecesIsAppend: the pieces, written in order, are Append's JSON; a
// raw conversation is one of them, the request's own bytes (not a copy).
func TestAppendPiecesIsAppend(t *testing.T) {
	raw := []byte(`[{"role":"user","content":"hi \"there\""}]`)
	yes := true
	cases := []struct {
		name string
		req  *pb.ChatCompletionRequest
		raw  bool
	}{
		{"decoded messages", &pb.ChatCompletionRequest{Model: "m", Messages: []*pb.ChatMessage{{Role: "user", Content: structpb.NewStringValue("x")}}}, false},
		{"raw messages", &pb.ChatCompletionRequest{Model: "m", MessagesJson: raw, Stream: true, StreamOptions: &pb.StreamOptions{IncludeUsage: &yes}}, true},
		{"raw messages and unknown members", &pb.ChatCompletionRequest{Model: "m", MessagesJson: raw,
			Extra: &structpb.Struct{Fields: map[string]*structpb.Value{"zz": structpb.NewBoolValue(true)}}}, true},
		{"nothing but raw messages", &pb.ChatCompletionRequest{MessagesJson: raw}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pieces := openaijson.AppendPieces(nil, tc.req)
			require.Equal(t, string(openaijson.Append(nil, tc.req)), string(bytes.Join(pieces, nil)))
			shared := false
			for _, p := range pieces {
				if len(p) == len(raw) && unsafe.SliceData(p) == unsafe.SliceData(raw) {
					shared = true
				}
			}
			require.Equal(t, tc.raw, shared, "the raw conversation is sent from its own buffer")
		})
	}
}

// FuzzAppendRequestPieces: a request as it goes upstream (AppendRequestPieces,
// which changes nothing in it and copies nothing of it) is written as Append
// writes a copy of it with the upstream's model, stream and stream_options set.
func FuzzAppendRequestPieces(f *testing.F) {
	for i, body := range []string{benchRequest, `{}`, `{"model":"m","messages":[]}`,
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":false,"x":1}}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"stop":["a"],"logit_bias":{"1":-5},"zz":[1,null]}`,
		`{"messages":[{"role":"tool","tool_call_id":"c","content":"\u00e9\ud83d\ude00"}],"tools":[{"type":"function","function":{"name":"f"}}],"extra":{"a":1}}`,
	} {
		f.Add([]byte(body), "up-model", i%2 == 0, i%3 == 0, i%2 == 1)
	}
	f.Fuzz(func(t *testing.T, data []byte, model string, stream, options, usage bool) {
		var req pb.ChatCompletionRequest
		if openaijson.UnmarshalChat(data, &req) != nil || !utf8.ValidString(model) {
			return
		}
		up := openaijson.Upstream{Model: model, Stream: stream}
		if options {
			up.StreamOptions = &pb.StreamOptions{IncludeUsage: &usage}
		}
		before := proto.Clone(&req)
		got := bytes.Join(openaijson.AppendRequestPieces(nil, &req, up), nil)
		require.True(t, proto.Equal(before, &req), "the request is not changed")
		want := proto.Clone(&req).(*pb.ChatCompletionRequest)
		want.Model, want.Stream, want.StreamOptions = up.Model, up.Stream, up.StreamOptions
		require.Equal(t, string(openaijson.Append(nil, want)), string(got))
	})
}
