package router

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/openaijson"
)

func TestChainRemainingFollowsWalkOrder(t *testing.T) {
	t.Parallel()
	a, b, c := Route{Provider: "a", Model: "m"}, Route{Provider: "b", Model: "m"}, Route{Provider: "c", Model: "m"}
	ch := &chain{routes: []Route{a, b, c}}
	cases := []struct {
		name  string
		tried []Route
		want  []Route
	}{
		{"first served", []Route{a}, []Route{b, c}},
		{"second served", []Route{a, b}, []Route{c}},
		{"last served", []Route{a, b, c}, nil},
		{"round robin picked b first", []Route{b}, []Route{a, c}},
		{"round robin picked c first", []Route{c, a}, []Route{b}},
		{"nothing tried", nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, ch.remaining(tc.tried))
		})
	}
}

func TestResumeOK(t *testing.T) {
	t.Parallel()
	two, one, yes := int32(2), int32(1), true
	require.True(t, resumeOK(&pb.ChatCompletionRequest{}))
	require.True(t, resumeOK(&pb.ChatCompletionRequest{N: &one}))
	require.False(t, resumeOK(&pb.ChatCompletionRequest{N: &two}), "n > 1")
	require.False(t, resumeOK(&pb.ChatCompletionRequest{Logprobs: &yes}), "logprobs")
}

// A resumed stream continues from the partial answer whichever form the
// conversation came in: decoded messages, or JSON kept as bytes.
func TestContinuationAppendsThePartialAnswer(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		body *pb.ChatCompletionRequest
	}{
		{"messages", &pb.ChatCompletionRequest{Model: "m", Messages: []*pb.ChatMessage{{Role: "user", Content: structpb.NewStringValue("hi")}}}},
		{"messages_json", &pb.ChatCompletionRequest{Model: "m", MessagesJson: []byte(`[{"role":"user","content":"hi"}]`)}},
		{"messages_json with trailing space", &pb.ChatCompletionRequest{Model: "m", MessagesJson: []byte("[{\"role\":\"user\",\"content\":\"hi\"}] \n")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := proto.Clone(tc.body)
			cont := continuation(tc.body, `so "far"`)
			require.True(t, proto.Equal(before, tc.body), "the client's body is untouched")
			msgs, err := openaijson.Messages(cont)
			require.NoError(t, err)
			require.Len(t, msgs, 2)
			require.Equal(t, "assistant", msgs[1].GetRole())
			require.Equal(t, `so "far"`, msgs[1].GetContent().GetStringValue())
		})
	}
}
