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

// A stream is not resumed on a target that is spent: the target's own view of
// its limits holds for a continuation too, and the client gets the break.
func TestResumeSkipsASpentTarget(t *testing.T) {
	t.Parallel()
	s := resumeGateway(t, "    stream_resume: true\n", "backup/gpt-4o-mini")
	s.backup.Script(fakeupstream.Reply{Text: "ok", Header: map[string]string{
		"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "30s"}})
	direct := userMsg("hi")
	direct.Model = "backup/gpt-4o-mini"
	_, err := sdk(s.g, "k").Chat.Completions.New(context.Background(), direct)
	require.NoError(t, err)
	require.Equal(t, 1, s.backup.Count())

	s.g.up.Script(cut)
	p := userMsg("hi")
	p.Model = "resumed"
	st := sdk(s.g, "k").Chat.Completions.NewStreaming(context.Background(), p)
	for st.Next() {
	}
	require.Error(t, st.Err(), "the break reaches the client: the only continuation target is spent")
	require.Equal(t, 1, s.backup.Count(), "the spent backup was not called for the continuation")
}
