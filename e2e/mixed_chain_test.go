package e2e

import (
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/fakeupstream"
)

// Chains that mix the two wires, both ways, for OpenAI-shaped clients (the
// Anthropic-shaped side is TestMessagesMixedChains): an OpenAI target ("up") and
// an Anthropic one ("claude"), with virtual models in each order. Whichever
// target answers, the client gets chat's shape; a target that fails (503, 529
// overloaded) moves the chain on, and a stream that breaks after its first event
// is an error the client sees, never a clean end.

func startMixed(t *testing.T) (*gateway, *fakeupstream.Anthropic) {
	t.Helper()
	claude := fakeupstream.NewAnthropic()
	t.Cleanup(claude.Close)
	claude.SetDefault(fakeupstream.Reply{Text: "Hello from Claude!"})
	g := start(t, "  master_key: "+messagesKey+"\n", withYAML("  claude:\n    type: anthropic\n    base_url: "+claude.URL+
		"\n    api_key: sk-ant-upstream\n"+
		"resilience:\n  retry:\n    max_retries: 0\n"+
		"virtual_models:\n"+
		"  - source: gpt-then-claude\n    strategy: failover\n    targets:\n      - model: up/gpt-4o\n      - model: claude/"+claudeModel+"\n"+
		"  - source: claude-then-gpt\n    strategy: failover\n    targets:\n      - model: claude/"+claudeModel+"\n      - model: up/gpt-4o\n"))
	return g, claude
}

func TestMixedChainOpenAIClients(t *testing.T) {
	t.Parallel()
	g, claude := startMixed(t)
	ctx := ctxFor(t)
	cases := []struct {
		name, model, want string
		fail              func()
	}{
		{"GPT fails over to Claude", "gpt-then-claude", "Hello from Claude!", func() { g.up.Script(fakeupstream.Reply{Status: 503}) }},
		{"Claude overloaded fails over to GPT", "claude-then-gpt", "Hello from the fake upstream!", func() { claude.Script(fakeupstream.Reply{Status: 529}) }},
	}
	for _, tc := range cases {
		t.Run(tc.name+", unary", func(t *testing.T) {
			tc.fail()
			p := userMsg("hi")
			p.Model = tc.model
			resp, err := sdk(g, messagesKey).Chat.Completions.New(ctx, p)
			require.NoError(t, err)
			require.Equal(t, tc.want, resp.Choices[0].Message.Content)
			require.Equal(t, "stop", resp.Choices[0].FinishReason)
		})
		t.Run(tc.name+", stream", func(t *testing.T) {
			tc.fail()
			p := userMsg("hi")
			p.Model = tc.model
			st := sdk(g, messagesKey).Chat.Completions.NewStreaming(ctx, p)
			acc := openai.ChatCompletionAccumulator{}
			for st.Next() {
				acc.AddChunk(st.Current())
			}
			require.NoError(t, st.Err())
			require.Equal(t, tc.want, acc.Choices[0].Message.Content)
			require.Equal(t, "stop", acc.Choices[0].FinishReason)
		})
	}
	t.Run("Claude's stream cut after its first event is an error, not a failover", func(t *testing.T) {
		claude.Script(fakeupstream.Reply{Text: "one two three four", CutAfter: 5}) // after two text deltas
		before := g.up.Count()
		p := userMsg("hi")
		p.Model = "claude-then-gpt"
		st := sdk(g, messagesKey).Chat.Completions.NewStreaming(ctx, p)
		for st.Next() {
		}
		require.Error(t, st.Err(), "a broken stream is never a clean end")
		require.Equal(t, before, g.up.Count(), "nothing is re-sent once the client has part of an answer")
	})
}

// gRPC callers reach Claude through the same translation: ChatService is one
// contract whatever wire the target speaks.
func TestMixedChainGRPCClients(t *testing.T) {
	t.Parallel()
	g, claude := startMixed(t)
	chat := pb.NewChatServiceClient(g.conn)
	ctx := metadata.AppendToOutgoingContext(ctxFor(t), "authorization", "Bearer "+messagesKey)
	req := &pb.ChatCompletionRequest{Model: "gpt-then-claude",
		Messages: []*pb.ChatMessage{{Role: "user", Content: structpb.NewStringValue("hi")}}}

	g.up.Script(fakeupstream.Reply{Status: 503})
	resp, err := chat.CreateChatCompletion(ctx, req)
	require.NoError(t, err)
	require.Equal(t, "Hello from Claude!", resp.GetChoices()[0].GetMessage().GetContent().GetStringValue())
	require.Equal(t, "stop", resp.GetChoices()[0].GetFinishReason())
	require.Equal(t, claudeModel, lastAnthropicRequest(t, claude)["model"])

	g.up.Script(fakeupstream.Reply{Status: 503})
	st, err := chat.StreamChatCompletion(ctx, req)
	require.NoError(t, err)
	text, _ := readGRPCStream(t, st)
	require.Equal(t, "Hello from Claude!", text)
}

func lastAnthropicRequest(t *testing.T, a *fakeupstream.Anthropic) map[string]any {
	t.Helper()
	reqs := a.Requests()
	require.NotEmpty(t, reqs)
	return reqs[len(reqs)-1].JSON()
}
