package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/fakeupstream"
)

// First-token deadline (issue 15, item 2): resilience.first_token_timeout bounds
// the wait for the first event with content; a role-only chunk does not end it.

// silentAfterRole sends the role chunk, then nothing for a minute.
var silentAfterRole = fakeupstream.Reply{StallAfter: 1, Stall: time.Minute}

// TestFirstTokenTimeoutIsRetriedOnTheSameTarget: with no backup, an upstream
// that sends headers, or a role-only chunk, and then nothing is retried like a
// failure before the first byte, and the client gets the retry's complete stream
// (the role chunk first), long before the silence would have ended.
func TestFirstTokenTimeoutIsRetriedOnTheSameTarget(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		first fakeupstream.Reply
	}{
		{"headers then nothing", fakeupstream.Reply{HeadersOnly: true}},
		{"a role-only chunk then nothing", silentAfterRole},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := start(t, "", withYAML("resilience:\n  first_token_timeout: 300ms\n  retry:\n    initial_backoff: 1ms\n"))

			g.up.Script(tc.first, fakeupstream.Reply{})
			t0 := time.Now()
			resp := restStream(t, g, "up/gpt-4o", "")
			require.Equal(t, http.StatusOK, resp.StatusCode)
			events := sseEvents(t, resp)
			require.Less(t, time.Since(t0), 20*time.Second, "REST: the silence was cut short")
			require.Contains(t, events[0], `"role":"assistant"`, "the role chunk is delivered first")
			text, done, _ := sseText(t, events)
			require.Equal(t, "Hello from the fake upstream!", text)
			require.True(t, done)
			require.Equal(t, 2, g.up.Count(), "REST: one retry")

			g.up.Script(tc.first, fakeupstream.Reply{})
			t0 = time.Now()
			text, err, _ := grpcStreamText(t, g, "up/gpt-4o", nil)
			require.NoError(t, err)
			require.Less(t, time.Since(t0), 20*time.Second, "gRPC: the silence was cut short")
			require.Equal(t, "Hello from the fake upstream!", text)
			require.Equal(t, 4, g.up.Count(), "gRPC: one retry")
		})
	}
}

// TestFirstTokenTimeoutFailsOverAndCountsForTheBreaker: a target whose streams
// never start is retried, then failed over, once per request; each request is
// one failure for its breaker, and the backup answers.
func TestFirstTokenTimeoutFailsOverAndCountsForTheBreaker(t *testing.T) {
	t.Parallel()
	g, backup := integrityChain(t, "", "resilience:\n  first_token_timeout: 300ms\n  retry:\n    max_retries: 1\n    initial_backoff: 1ms\n")
	g.up.SetDefault(silentAfterRole)

	resp := restStream(t, g, "resilient-chat", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "backup/gpt-4o-mini", resp.Header.Get("X-Switchyard-Target"))
	text, done, _ := sseText(t, sseEvents(t, resp))
	require.Equal(t, "Hello from the backup!", text)
	require.True(t, done)
	require.Equal(t, 2, g.up.Count(), "retried once on up")
	require.Equal(t, int32(1), upBreaker(t, g).GetConsecutiveFailures(), "one failed sequence")

	text, err, hdr := grpcStreamText(t, g, "resilient-chat", nil)
	require.NoError(t, err)
	require.Equal(t, "Hello from the backup!", text)
	require.Equal(t, []string{"backup/gpt-4o-mini"}, hdr.Get("x-switchyard-target"))
	require.Equal(t, 4, g.up.Count())
	require.Equal(t, int32(2), upBreaker(t, g).GetConsecutiveFailures())
	require.Equal(t, 2, backup.Count())
	require.Eventually(t, func() bool { return g.up.Gone() == 4 }, 10*time.Second, 10*time.Millisecond,
		"every silent upstream request was closed")
}

// TestSlowFirstTokenWithinTheDeadline: content that arrives late but within
// first_token_timeout is a normal stream (one attempt), and a role-only chunk
// followed by content is relayed whole.
func TestSlowFirstTokenWithinTheDeadline(t *testing.T) {
	t.Parallel()
	g := start(t, "", withYAML("resilience:\n  first_token_timeout: 5s\n"))
	slow := fakeupstream.Reply{StallAfter: 1, Stall: 300 * time.Millisecond}

	g.up.Script(slow)
	resp := restStream(t, g, "up/gpt-4o", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	events := sseEvents(t, resp)
	require.Contains(t, events[0], `"role":"assistant"`)
	text, done, _ := sseText(t, events)
	require.Equal(t, "Hello from the fake upstream!", text)
	require.True(t, done)

	g.up.Script(slow)
	text, err, _ := grpcStreamText(t, g, "up/gpt-4o", nil)
	require.NoError(t, err)
	require.Equal(t, "Hello from the fake upstream!", text)
	require.Equal(t, 2, g.up.Count(), "no retries")
}

// TestFirstTokenTimeoutDoesNotBoundUnaryCalls: a non-stream call keeps the
// provider's timeout; first_token_timeout is for streams.
func TestFirstTokenTimeoutDoesNotBoundUnaryCalls(t *testing.T) {
	t.Parallel()
	g := start(t, "", withYAML("resilience:\n  first_token_timeout: 100ms\n"))
	g.up.Script(fakeupstream.Reply{Delay: 400 * time.Millisecond})
	resp := post(t, g.base+"/chat/completions", chatBody+`}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, 1, g.up.Count())
	require.False(t, strings.Contains(resp.Header.Get("X-Switchyard-Target"), "backup"))
}
