package router

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/resilience"
)

// scriptStream sends its chunks, then ends as end says (nil: EOF).
type scriptStream struct {
	chunks []*pb.ChatCompletionChunk
	end    error
}

func (s *scriptStream) Recv() (*pb.ChatCompletionChunk, error) {
	if len(s.chunks) == 0 {
		if s.end == nil {
			return nil, io.EOF
		}
		return nil, s.end
	}
	c := s.chunks[0]
	s.chunks = s.chunks[1:]
	return c, nil
}

func (s *scriptStream) Close() error { return nil }

// scriptProvider streams one script per call, in order.
type scriptProvider struct {
	fakeProvider
	scripts []*scriptStream
}

func (p *scriptProvider) Stream(context.Context, *providers.Request) (providers.Stream, error) {
	s := p.scripts[0]
	p.scripts = p.scripts[1:]
	return s, nil
}

func textChunk(text string, usage *pb.Usage) *pb.ChatCompletionChunk {
	return &pb.ChatCompletionChunk{Id: "x", Choices: []*pb.ChunkChoice{{Delta: &pb.ChatDelta{Content: &text}}}, Usage: usage}
}

// TestResumeUsageOfEveryPart: a stream cut on a (which reported its usage), cut
// again on b (which reported none) and finished on c. The client's usage sums
// the parts that reported theirs — a and c, b's silence does not drop a's — and
// the trace has each part's usage, b's estimated, for the ledger.
func TestResumeUsageOfEveryPart(t *testing.T) {
	cut := &providers.StreamError{Provider: "x", Reason: "cut"}
	var targets []Target
	for name, script := range map[string]*scriptStream{
		"a": {chunks: []*pb.ChatCompletionChunk{textChunk("one ", &pb.Usage{PromptTokens: 1000, CompletionTokens: 50, TotalTokens: 1050})}, end: cut},
		"b": {chunks: []*pb.ChatCompletionChunk{textChunk("two three ", nil)}, end: cut},
		"c": {chunks: []*pb.ChatCompletionChunk{textChunk("four", nil), {Id: "x", Usage: &pb.Usage{PromptTokens: 1100, CompletionTokens: 200, TotalTokens: 1300}}}},
	} {
		p := &scriptProvider{fakeProvider: fakeProvider{name: name, models: []string{"m"}, errs: map[string][]error{}, calls: new([]string), keys: new([]string)},
			scripts: []*scriptStream{script}}
		targets = append(targets, Target{Provider: p, Guard: resilience.NewGuard(resilience.GuardConfig{Provider: name,
			Retry: resilience.DefaultRetry(), Breaker: resilience.DefaultBreaker()})})
	}
	r := New(slog.New(slog.DiscardHandler), targets)
	r.Discover(context.Background(), 0)
	vm := chainVM("chain", StrategyFailover, "a/m", "b/m", "c/m")
	vm.MaxResumes = 2
	require.NoError(t, r.SetVirtualModels([]VirtualModel{vm}))

	trace := &Trace{}
	st, _, err := r.Stream(context.Background(), &pb.ChatCompletionRequest{Model: "chain"}, Call{Trace: trace})
	require.NoError(t, err)
	var last *pb.Usage
	for {
		c, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if c.GetUsage() != nil {
			last = c.GetUsage()
		}
	}
	require.Equal(t, int32(2100), last.GetPromptTokens(), "a's and c's: b reported none")
	require.Equal(t, int32(250), last.GetCompletionTokens())
	require.Equal(t, []string{"b/m", "c/m"}, trace.Resumes)
	require.Len(t, trace.Cut, 2)
	require.Equal(t, CutUsage{Route: Route{"a", "m"}, PromptTokens: 1000, CompletionTokens: 50}, trace.Cut[0])
	require.Equal(t, Route{"b", "m"}, trace.Cut[1].Route)
	require.True(t, trace.Cut[1].Estimated)
	require.Equal(t, int64(len("two three ")+3)/4, trace.Cut[1].CompletionTokens, "the text b streamed")
	require.Positive(t, trace.Cut[1].PromptTokens, "the continuation b was sent")
	require.NotNil(t, trace.LastPart)
	require.Equal(t, CutUsage{Route: Route{"c", "m"}, PromptTokens: 1100, CompletionTokens: 200}, trace.LastPart())
}
