package e2e

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/fakeupstream"
)

// An upstream whose rate-limit headers say nothing is left is skipped along the
// chain until its reset, like a target at its own limits: the next call goes to
// the backup without spending an upstream call on a certain 429.
func TestUpstreamRateLimitHeadersTightenTheLocalView(t *testing.T) {
	t.Parallel()
	g, backup := startChain(t, "")
	g.up.Script(fakeupstream.Reply{Header: map[string]string{
		"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "30s"}})
	p := userMsg("hi")
	p.Model = "resilient-chat"
	resp, err := sdk(g, "k").Chat.Completions.New(context.Background(), p)
	require.NoError(t, err)
	require.Equal(t, "Hello from the fake upstream!", resp.Choices[0].Message.Content, "the answer carrying the headers is served")
	require.Equal(t, 1, g.up.Count())

	resp, err = sdk(g, "k").Chat.Completions.New(context.Background(), p)
	require.NoError(t, err)
	require.Equal(t, "Hello from the backup!", resp.Choices[0].Message.Content)
	require.Equal(t, 1, g.up.Count(), "the spent upstream was not called again before its reset")
	require.Equal(t, 1, backup.Count())
}
