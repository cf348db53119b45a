package router

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/resilience"
)

// streamProvider opens streams that send one chunk and then end with end (io.EOF:
// complete), counting the streams it opened.
type streamProvider struct {
	name string
	end  error
	mu   sync.Mutex
	n    int
}

func (p *streamProvider) Name() string                             { return p.name }
func (p *streamProvider) Models(context.Context) ([]string, error) { return []string{"m"}, nil }
func (p *streamProvider) Chat(context.Context, *providers.Request) (*pb.ChatCompletion, error) {
	return &pb.ChatCompletion{}, nil
}

func (p *streamProvider) Stream(context.Context, *providers.Request) (providers.Stream, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	return &oneChunk{end: p.end}, nil
}

func (p *streamProvider) opened() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

type oneChunk struct {
	end  error
	sent bool
}

func (s *oneChunk) Recv() (*pb.ChatCompletionChunk, error) {
	if !s.sent {
		s.sent = true
		return &pb.ChatCompletionChunk{Id: "c"}, nil
	}
	return nil, s.end
}

func (s *oneChunk) Close() error { return nil }

func (s *oneChunk) NextRaw() (providers.RawChunk, error) {
	c, err := s.Recv()
	if err != nil {
		return providers.RawChunk{}, err
	}
	return providers.RawChunk{Decoded: c}, nil
}

func streamRouter(t *testing.T, primaryEnd error) (*Router, *streamProvider, *streamProvider) {
	t.Helper()
	a := &streamProvider{name: "a", end: primaryEnd}
	b := &streamProvider{name: "b", end: io.EOF}
	br := resilience.DefaultBreaker()
	br.FailureThreshold = 3
	var targets []Target
	for _, p := range []*streamProvider{a, b} {
		targets = append(targets, Target{Provider: p,
			Guard: resilience.NewGuard(resilience.GuardConfig{Provider: p.name, Retry: resilience.DefaultRetry(), Breaker: br})})
	}
	r := New(slog.New(slog.NewTextHandler(io.Discard, nil)), targets)
	r.Discover(context.Background(), 0)
	require.NoError(t, r.SetVirtualModels([]VirtualModel{chainVM("chat", StrategyFailover, "a/m", "b/m")}))
	return r, a, b
}

// drain reads a stream to its end, by Recv or NextRaw, and returns what ended it.
func drain(t *testing.T, s providers.Stream, raw bool) error {
	t.Helper()
	defer s.Close()
	for {
		var err error
		if raw {
			rs, ok := s.(providers.RawStream)
			require.True(t, ok, "the router keeps the provider's raw relay")
			_, err = rs.NextRaw()
		} else {
			_, err = s.Recv()
		}
		if err != nil {
			return err
		}
	}
}

// TestBrokenStreamsOpenTheBreaker: streams that break after their first event
// are failures of their target, so after failure_threshold of them the breaker
// opens and the chain's backup serves. Each failed stream still ends with its
// error: nothing is re-sent.
func TestBrokenStreamsOpenTheBreaker(t *testing.T) {
	t.Parallel()
	breaks := map[string]error{
		"cut":         &providers.StreamError{Provider: "a", Kind: providers.StreamClosedEarly, Reason: "cut"},
		"stall":       &providers.StreamError{Provider: "a", Kind: providers.StreamStalled, Reason: "stall"},
		"malformed":   &providers.StreamError{Provider: "a", Kind: providers.StreamMalformedChunk, Reason: "bad"},
		"error event": &providers.StreamError{Provider: "a", Kind: providers.StreamErrorEvent, Reason: "boom"},
	}
	for name, end := range breaks {
		for _, raw := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/raw=%v", name, raw), func(t *testing.T) {
				t.Parallel()
				r, a, b := streamRouter(t, end)
				for i := range 3 {
					s, route, err := r.Stream(context.Background(), &pb.ChatCompletionRequest{Model: "chat"}, Call{})
					require.NoError(t, err)
					require.Equal(t, "a/m", route.String(), "stream %d", i)
					require.ErrorIs(t, drain(t, s, raw), providers.ErrStreamIncomplete)
				}
				require.Equal(t, resilience.Open, r.Breakers()[0].State, "3 broken streams reach failure_threshold")
				s, route, err := r.Stream(context.Background(), &pb.ChatCompletionRequest{Model: "chat"}, Call{})
				require.NoError(t, err)
				require.Equal(t, "b/m", route.String(), "routed around the open breaker")
				require.ErrorIs(t, drain(t, s, raw), io.EOF)
				require.Equal(t, 3, a.opened())
				require.Equal(t, 1, b.opened())
			})
		}
	}
}

// TestCompleteAndAbandonedStreamsDoNotOpenTheBreaker: a complete stream is a
// success, and one the client leaves (Close before the end) counts as nothing.
func TestCompleteAndAbandonedStreamsDoNotOpenTheBreaker(t *testing.T) {
	t.Parallel()
	r, _, _ := streamRouter(t, io.EOF)
	for range 5 {
		s, _, err := r.Stream(context.Background(), &pb.ChatCompletionRequest{Model: "chat"}, Call{})
		require.NoError(t, err)
		require.NoError(t, s.Close(), "abandoned after the first event")
	}
	for range 5 {
		s, _, err := r.Stream(context.Background(), &pb.ChatCompletionRequest{Model: "chat"}, Call{})
		require.NoError(t, err)
		require.ErrorIs(t, drain(t, s, false), io.EOF)
	}
	require.Equal(t, resilience.Closed, r.Breakers()[0].State)
	require.Equal(t, 0, r.Breakers()[0].ConsecutiveFailures)
}

// TestAbandonedStreamCountsAsNothing: a stream the client leaves neither adds a
// failure nor, as a success would, wipes the failures before it: two broken
// streams, one abandoned, one more broken, and failure_threshold (3) is reached.
func TestAbandonedStreamCountsAsNothing(t *testing.T) {
	t.Parallel()
	cut := &providers.StreamError{Provider: "a", Kind: providers.StreamClosedEarly, Reason: "cut"}
	r, _, _ := streamRouter(t, cut)
	open := func() providers.Stream {
		s, route, err := r.Stream(context.Background(), &pb.ChatCompletionRequest{Model: "chat"}, Call{})
		require.NoError(t, err)
		require.Equal(t, "a/m", route.String())
		return s
	}
	for range 2 {
		require.ErrorIs(t, drain(t, open(), false), providers.ErrStreamIncomplete)
	}
	s := open()
	_, err := s.Recv()
	require.NoError(t, err)
	require.NoError(t, s.Close(), "abandoned after the first event")
	require.Equal(t, 2, r.Breakers()[0].ConsecutiveFailures, "the abandoned stream changed nothing")
	require.ErrorIs(t, drain(t, open(), false), providers.ErrStreamIncomplete)
	require.Equal(t, resilience.Open, r.Breakers()[0].State)
}

// TestBrokenStreamsReachRequestHealth: the admin API's request health sees a stream
// that broke after its first event as a failure, and one the client left as nothing.
func TestBrokenStreamsReachRequestHealth(t *testing.T) {
	t.Parallel()
	cut := &providers.StreamError{Provider: "a", Kind: providers.StreamClosedEarly, Reason: "cut"}
	r, _, _ := streamRouter(t, cut)
	report := func() ProviderReport {
		for _, rep := range r.Report() {
			if rep.Name == "a" {
				return rep
			}
		}
		t.Fatal("no provider a")
		return ProviderReport{}
	}
	s, _, err := r.Stream(context.Background(), &pb.ChatCompletionRequest{Model: "chat"}, Call{})
	require.NoError(t, err)
	require.ErrorIs(t, drain(t, s, false), providers.ErrStreamIncomplete)
	require.Equal(t, 1, report().RecentFailures, "the break is a failure")

	s, _, err = r.Stream(context.Background(), &pb.ChatCompletionRequest{Model: "chat"}, Call{})
	require.NoError(t, err)
	require.NoError(t, s.Close(), "abandoned")
	require.Equal(t, 1, report().RecentFailures, "a client leaving is no failure")
}
