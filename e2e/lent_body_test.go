package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/fakeupstream"
)

// Long REST bodies are read into lent buffers and sent upstream from them;
// a buffer goes back only when its request and every upstream body reading it
// are done. Under concurrent long requests, some retried after a 503 or a
// reset connection (a second upstream body from the same buffer), every
// upstream request carries exactly the conversation its own client sent.
func TestLongBodiesReachTheirOwnUpstreamRequests(t *testing.T) {
	t.Parallel()
	g := start(t, "", withYAML("resilience:\n  retry:\n    max_retries: 4\n    initial_backoff: 1ms\n    max_backoff: 5ms\n    budget_percent: 100\n"+
		"  circuit_breaker:\n    failure_threshold: 1000\n"))
	var faults []fakeupstream.Reply
	for range 8 {
		faults = append(faults, fakeupstream.Reply{Status: 503}, fakeupstream.Reply{}, fakeupstream.Reply{Reset: true}, fakeupstream.Reply{})
	}
	g.up.Script(faults...)
	client := sdk(g, "k")
	sent := map[string]string{} // marker: the conversation's content
	var mu sync.Mutex
	for round := range 3 {
		var wg sync.WaitGroup
		for i := range 12 {
			marker := fmt.Sprintf("<request %d.%d>", round, i)
			text := strings.Repeat(marker+" a long \"prompt\"\twith é and 漢字\n", 70<<10/40+i*97)
			mu.Lock()
			sent[marker] = text
			mu.Unlock()
			wg.Go(func() {
				resp, err := client.Chat.Completions.New(context.Background(), userMsg(text))
				if err == nil && len(resp.Choices) != 1 {
					err = fmt.Errorf("%d choices", len(resp.Choices))
				}
				if err != nil {
					t.Errorf("%s: %v", marker, err)
				}
			})
		}
		wg.Wait()
	}
	answered := map[string]bool{}
	for _, r := range g.up.Requests() {
		var body struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		require.NoError(t, json.Unmarshal(r.Body, &body), "an upstream body is not JSON")
		require.Len(t, body.Messages, 1)
		got := body.Messages[0].Content
		marker, _, _ := strings.Cut(got, " a long")
		want, ok := sent[marker]
		require.True(t, ok, "an upstream body starts with %.40q", got)
		require.True(t, got == want, "%s: the upstream got %d bytes, not the %d its client sent", marker, len(got), len(want))
		require.True(t, bytes.Contains(r.Body, []byte(`"model":"gpt-4o"`)))
		answered[marker] = true
	}
	require.Len(t, answered, len(sent))
}
