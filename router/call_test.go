package router

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/resilience"
)

// A call of another endpoint kind than chat runs through the same chain: the
// router sees only the model and the per-target Attempt, never the body.
func TestUnaryRunsAnyEndpointThroughTheChain(t *testing.T) {
	t.Parallel()
	f := newFixture(t, chainVM("emb", StrategyFailover, "a/m1", "b/m1"))
	var seen []string
	do := func(_ context.Context, tg Target, a providers.Attempt) (string, error) {
		seen = append(seen, tg.Provider.Name()+"/"+a.Model+" key="+a.IdempotencyKey)
		if tg.Provider.Name() == "a" {
			return "", perr(503, "down")
		}
		return "vector from " + tg.Provider.Name(), nil
	}
	got, route, err := Unary(f.r, context.Background(), "emb", Call{IdempotencyKey: "k", Op: "embeddings"}, do)
	require.NoError(t, err)
	require.Equal(t, "vector from b", got)
	require.Equal(t, "b/m1", route.String())
	require.Equal(t, []string{"a/m1 key=k", "b/m1 key="}, seen, "the Idempotency-Key goes to the first target only")
}

// eventStream yields its events, then ends with end.
type eventStream struct {
	events []providers.Event
	end    error
	closed bool
}

func (s *eventStream) Next() (providers.Event, error) {
	if len(s.events) == 0 {
		return providers.Event{}, s.end
	}
	ev := s.events[0]
	s.events = s.events[1:]
	return ev, nil
}

func (s *eventStream) Close() error { s.closed = true; return nil }

// A wire-native event stream's end reaches the target's breaker like a chat
// stream's: a cut after the first event is a failure, a clean end a success, and
// a client leaving is nothing.
func TestStreamingEventStreamEndReachesTheBreaker(t *testing.T) {
	t.Parallel()
	cut := &providers.StreamError{Provider: "a", Kind: providers.StreamClosedEarly, Reason: "no message_stop"}
	cases := []struct {
		name      string
		end       error
		closeOnly bool
		state     resilience.State
	}{
		{"cut after the first event opens the breaker", cut, false, resilience.Open},
		{"clean end keeps it closed", io.EOF, false, resilience.Closed},
		{"client leaving counts as nothing", cut, true, resilience.Closed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t) // breaker threshold 1, model scope
			src := &eventStream{events: []providers.Event{{Type: "message_start"}}, end: tc.end}
			open := func(context.Context, Target, providers.Attempt) (providers.EventStream, error) { return src, nil }
			s, route, err := Streaming(f.r, context.Background(), "a/m1", Call{Op: "messages"}, open,
				func(s providers.EventStream) { s.Close() }, WatchEvents)
			require.NoError(t, err)
			require.Equal(t, "a/m1", route.String())
			if tc.closeOnly {
				require.NoError(t, s.Close())
			} else {
				_, err = s.Next()
				require.NoError(t, err)
				_, err = s.Next()
				require.True(t, errors.Is(err, tc.end))
				require.NoError(t, s.Close())
			}
			require.True(t, src.closed)
			require.Equal(t, tc.state, breakerState(f.r, "a", "m1"))
		})
	}
}

func breakerState(r *Router, provider, model string) resilience.State {
	for _, e := range r.Breakers() {
		if e.Provider == provider && e.Model == model {
			return e.State
		}
	}
	return resilience.Closed
}

// A target whose provider does not serve the endpoint kind is skipped along a
// chain like an open breaker; alone, its 400 is the answer.
func TestUnsupportedEndpointIsSkipped(t *testing.T) {
	t.Parallel()
	f := newFixture(t, chainVM("emb", StrategyFailover, "a/m1", "b/m1"))
	do := func(_ context.Context, tg Target, a providers.Attempt) (string, error) {
		if tg.Provider.Name() == "a" {
			return "", &providers.Error{Provider: "a", Status: 400, Code: providers.CodeUnsupportedEndpoint, Message: "provider a does not serve embeddings"}
		}
		return "from b", nil
	}
	got, route, err := Unary(f.r, context.Background(), "emb", Call{}, do)
	require.NoError(t, err)
	require.Equal(t, "from b", got)
	require.Equal(t, "b/m1", route.String())
	reqs, _, _ := f.r.health["a"].summary(time.Now())
	require.Zero(t, reqs, "never called: not in a's health")

	_, _, err = Unary(f.r, context.Background(), "a/m1", Call{}, do)
	var pe *providers.Error
	require.True(t, errors.As(err, &pe))
	require.Equal(t, 400, pe.Status)
}
