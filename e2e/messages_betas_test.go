package e2e

import (
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/fakeupstream"
)

// A client's anthropic-beta opt-ins reach an Anthropic target on the native
// path, beside the provider's configured betas, and on every attempt of a chain.
func TestMessagesClientBetasReachTheUpstream(t *testing.T) {
	t.Parallel()
	g, claude := startMixed(t)
	ctx := ctxFor(t)
	g.up.Script(fakeupstream.Reply{Status: 503}) // the chain moves on to Claude
	_, err := claudeSDK(g).Messages.New(ctx, anthropic.MessageNewParams{Model: "gpt-then-claude", MaxTokens: 16, Messages: userSays("hi")},
		option.WithHeader("anthropic-beta", "prompt-caching-2024-07-31, token-efficient-tools-2025-02-19"),
		option.WithHeaderAdd("anthropic-beta", "interleaved-thinking-2025-05-14"))
	require.NoError(t, err)
	reqs := claude.Requests()
	require.Equal(t, "prompt-caching-2024-07-31,token-efficient-tools-2025-02-19,interleaved-thinking-2025-05-14",
		reqs[len(reqs)-1].Header.Get("Anthropic-Beta"))
}
