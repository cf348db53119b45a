package e2e

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestResumeBillsEveryPart: a stream cut on one target and continued on another
// was billed by both upstreams. The ledger records each part on its attempt —
// the cut one (outcome stream_cut, its tokens estimated: it was cut before its
// usage) and the one that finished (its reported usage) — each priced at its own
// target's price, and the record's tokens and cost are their sums.
func TestResumeBillsEveryPart(t *testing.T) {
	t.Parallel()
	const prices = "pricing:\n  up/gpt-4o: {input: 1, output: 2}\n  backup/gpt-4o-mini: {input: 0.5, output: 1}\n"
	s := resumeGatewayYAML(t, "", prices, "    stream_resume: true\n", "backup/gpt-4o-mini")
	s.g.up.Script(cut)
	text, done, incomplete := sseText(t, restEvents(t, s.g, "resumed", `,"stream_options":{"include_usage":true}`))
	require.True(t, done)
	require.False(t, incomplete)
	require.Equal(t, resumeFull, text)

	rec := waitRecords(t, s.g, 1)[0].(map[string]any)
	require.Equal(t, "backup", rec["provider"])
	require.Equal(t, float64(1), rec["resumes"])
	attempts := rec["attempts"].([]any)
	require.Len(t, attempts, 2, "%v", attempts)
	cutPart, last := attempts[0].(map[string]any), attempts[1].(map[string]any)

	require.Equal(t, "up/gpt-4o", cutPart["target"])
	require.Equal(t, "stream_cut", cutPart["outcome"])
	require.Equal(t, true, cutPart["tokens_estimated"], "cut before its usage chunk")
	cutPrompt := number(t, cutPart["prompt_tokens"])
	require.Positive(t, cutPrompt, "the request it was sent")
	require.Equal(t, int64(len(resumePartial)/4), number(t, cutPart["completion_tokens"]), "the text it streamed, ~4 bytes a token")
	cutCost := float64(cutPrompt)*1e-6 + float64(len(resumePartial)/4)*2e-6
	require.InDelta(t, cutCost, cutPart["cost_usd"], 1e-12, "at up/gpt-4o's price")

	require.Equal(t, "backup/gpt-4o-mini", last["target"])
	require.Equal(t, "ok", last["outcome"])
	require.Equal(t, int64(17), number(t, last["prompt_tokens"]), "the finishing upstream's own usage")
	require.Equal(t, int64(4), number(t, last["completion_tokens"]))
	lastCost := 17*0.5e-6 + 4*1e-6
	require.InDelta(t, lastCost, last["cost_usd"], 1e-12, "at backup/gpt-4o-mini's price")

	require.Equal(t, cutPrompt+17, number(t, rec["prompt_tokens"]), "the record sums the parts")
	require.Equal(t, int64(len(resumePartial)/4+4), number(t, rec["completion_tokens"]))
	require.Equal(t, true, rec["tokens_estimated"])
	require.InDelta(t, cutCost+lastCost, rec["cost_usd"], 1e-12)

	code, body := adminREST(t, s.g, http.MethodGet, "/admin/v1/usage?group_by=provider", "")
	require.Equal(t, http.StatusOK, code, "%v", body)
}

// number reads a JSON number that protojson may write as a string (int64).
func number(t *testing.T, v any) int64 {
	t.Helper()
	switch n := v.(type) {
	case float64:
		return int64(n)
	case string:
		var out int64
		for _, c := range n {
			require.True(t, c >= '0' && c <= '9', "%q", n)
			out = out*10 + int64(c-'0')
		}
		return out
	}
	t.Fatalf("not a number: %#v", v)
	return 0
}
