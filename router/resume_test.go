package router

import (
	"testing"

	"github.com/stretchr/testify/require"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
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
