package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/fakeupstream"
)

// chaosTally is what the clients of one fault saw.
type chaosTally struct {
	requests, complete, explicitErrors, fakeComplete int
}

// chaosOutcome reads one REST stream as a client would and says whether it was a
// complete answer (a finish_reason and [DONE], content that is a whole answer of
// an upstream, or a primary's partial answer continued by the backup), an explicit
// error (an error status or an in-band error event, no [DONE]), or neither: an
// answer passed off as complete while incomplete.
func chaosOutcome(t *testing.T, resp *http.Response, primary, backup string) string {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		return "error"
	}
	var content strings.Builder
	finished, done, errEvent := false, false, false
	for _, ev := range sseEvents(t, resp) {
		if ev == "[DONE]" {
			done = true
			continue
		}
		var c struct {
			Error   json.RawMessage `json:"error"`
			Choices []struct {
				Delta        struct{ Content string } `json:"delta"`
				FinishReason *string                  `json:"finish_reason"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal([]byte(ev), &c), ev)
		if c.Error != nil {
			errEvent = true
			continue
		}
		for _, ch := range c.Choices {
			content.WriteString(ch.Delta.Content)
			if ch.FinishReason != nil {
				finished = true
			}
		}
	}
	text := content.String()
	whole := text == primary || text == backup ||
		(strings.HasSuffix(text, backup) && strings.HasPrefix(primary, strings.TrimSuffix(text, backup)))
	switch {
	case errEvent && !done:
		return "error"
	case done && finished && whole && !errEvent:
		return "complete"
	}
	return "fake"
}

// chaosChain is a gateway with two chains over the same targets (up, then a
// healthy backup), one with stream_resume; short stream timeouts keep stalls quick.
func chaosChain(t *testing.T) *gateway {
	t.Helper()
	backup := fakeupstream.New("gpt-4o-mini")
	t.Cleanup(backup.Close)
	backup.SetDefault(fakeupstream.Reply{Text: "Hello from the backup!"})
	targets := "    targets:\n      - model: up/gpt-4o\n      - model: backup/gpt-4o-mini\n"
	return start(t, "  stream_idle_timeout: 200ms\n",
		withProviderYAML("    resilience:\n      first_token_timeout: 300ms\n"),
		withYAML("  backup:\n    type: openai\n    base_url: "+backup.URL+"\n"+
			"resilience:\n  retry:\n    max_retries: 1\n    initial_backoff: 1ms\n"+
			"virtual_models:\n  - source: resilient-chat\n    strategy: failover\n"+targets+
			"  - source: resumable-chat\n    strategy: failover\n    stream_resume: true\n"+targets))
}

// TestChaosThroughAFailoverChain sends streams through a two-target chain whose
// primary fails in one way per subtest, with and without stream_resume, and counts
// what the clients saw. Every answer is either complete or an explicit error: not
// one incomplete answer is passed off as complete.
func TestChaosThroughAFailoverChain(t *testing.T) {
	t.Parallel()
	const perFault = 12
	role := `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`
	word := `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"Hello "},"finish_reason":null}]}`
	faults := []struct {
		name  string
		reply fakeupstream.Reply
	}{
		{"429 with Retry-After", fakeupstream.Reply{Status: 429, Header: map[string]string{"Retry-After": "0"}}},
		{"500", fakeupstream.Reply{Status: 500}},
		{"reset before headers", fakeupstream.Reply{Reset: true}},
		{"in-band error first", fakeupstream.Reply{Events: []string{`{"error":{"message":"overloaded","type":"server_error"}}`}}},
		{"empty 200", fakeupstream.Reply{Events: []string{}}},
		{"only [DONE]", fakeupstream.Reply{Events: []string{"[DONE]"}}},
		{"headers then nothing", fakeupstream.Reply{HeadersOnly: true}},
		{"cut after two words", fakeupstream.Reply{CutAfter: 3}},
		{"stall after two words", fakeupstream.Reply{StallAfter: 3, Stall: 10 * time.Second}},
		{"malformed chunk", fakeupstream.Reply{Events: []string{role, word, `{"choices":[{"index":"zero"}]}`}}},
		{"in-band error mid-stream", fakeupstream.Reply{Events: []string{role, word, `{"error":{"message":"boom","type":"server_error"}}`}}},
		{"[DONE] without a finish", fakeupstream.Reply{Events: []string{role, word, "[DONE]"}}},
	}
	const primary, backup = "Hello from the fake upstream!", "Hello from the backup!"
	var report []string
	for _, resume := range []bool{false, true} {
		for _, f := range faults {
			name := fmt.Sprintf("%s/resume=%v", f.name, resume)
			t.Run(name, func(t *testing.T) {
				g := chaosChain(t)
				model := "resilient-chat"
				if resume {
					model = "resumable-chat"
				}
				g.up.SetDefault(f.reply)
				var tally chaosTally
				for range perFault {
					resp := post(t, g.base+"/chat/completions",
						`{"model":"`+model+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
					tally.requests++
					switch chaosOutcome(t, resp, primary, backup) {
					case "complete":
						tally.complete++
					case "error":
						tally.explicitErrors++
					default:
						tally.fakeComplete++
					}
					resp.Body.Close()
				}
				report = append(report, fmt.Sprintf("%-40s requests %2d  complete %2d  explicit errors %2d  passed off as complete %d",
					name, tally.requests, tally.complete, tally.explicitErrors, tally.fakeComplete))
				require.Zero(t, tally.fakeComplete, "an incomplete answer passed off as complete")
				require.Equal(t, tally.requests, tally.complete+tally.explicitErrors)
				if !resume || !strings.Contains(f.name, "word") {
					return
				}
				require.Equal(t, perFault, tally.complete, "a break after the first byte is resumed on the backup")
			})
		}
	}
	t.Cleanup(func() { t.Log("chaos run:\n" + strings.Join(report, "\n")) })
}
