package openaijson_test

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
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
