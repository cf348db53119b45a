package server

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/usage"
)

// TestBillParts: a resumed stream's usage is split by part, whichever parts
// reported their usage: no part is billed twice or left at zero.
func TestBillParts(t *testing.T) {
	a, b, c := router.Route{Provider: "a", Model: "m"}, router.Route{Provider: "b", Model: "m"}, router.Route{Provider: "c", Model: "m"}
	attempts := func(targets ...string) []usage.Attempt {
		out := make([]usage.Attempt, len(targets))
		for i, tg := range targets {
			out[i] = usage.Attempt{Target: tg, Outcome: "ok"}
		}
		return out
	}
	tests := []struct {
		name     string
		reported usage.Tokens // what the server read from the stream's usage chunks
		cut      []router.CutUsage
		last     router.CutUsage
		final    router.Route
		parts    []usage.Tokens // per attempt
	}{
		{name: "cut part estimated, last reported", reported: usage.Tokens{Prompt: 17, Completion: 4},
			cut:  []router.CutUsage{{Route: a, PromptTokens: 10, CompletionTokens: 2, Estimated: true}},
			last: router.CutUsage{Route: b, PromptTokens: 17, CompletionTokens: 4}, final: b,
			parts: []usage.Tokens{{Prompt: 10, Completion: 2, Estimated: true}, {Prompt: 17, Completion: 4}}},
		{name: "cut part reported: summed into the last's usage, taken out of it", reported: usage.Tokens{Prompt: 1017, Completion: 54},
			cut:  []router.CutUsage{{Route: a, PromptTokens: 1000, CompletionTokens: 50}},
			last: router.CutUsage{Route: b, PromptTokens: 17, CompletionTokens: 4}, final: b,
			parts: []usage.Tokens{{Prompt: 1000, Completion: 50}, {Prompt: 17, Completion: 4}}},
		{name: "reported, estimated, reported", reported: usage.Tokens{Prompt: 2100, Completion: 250},
			cut: []router.CutUsage{{Route: a, PromptTokens: 1000, CompletionTokens: 50},
				{Route: b, PromptTokens: 1010, CompletionTokens: 3, Estimated: true}},
			last: router.CutUsage{Route: c, PromptTokens: 1100, CompletionTokens: 200}, final: c,
			parts: []usage.Tokens{{Prompt: 1000, Completion: 50}, {Prompt: 1010, Completion: 3, Estimated: true}, {Prompt: 1100, Completion: 200}}},
		{name: "cut part reported, the last one none: the last is estimated, not zero", reported: usage.Tokens{Prompt: 1000, Completion: 50},
			cut:  []router.CutUsage{{Route: a, PromptTokens: 1000, CompletionTokens: 50}},
			last: router.CutUsage{Route: b, PromptTokens: 1013, CompletionTokens: 5, Estimated: true}, final: b,
			parts: []usage.Tokens{{Prompt: 1000, Completion: 50}, {Prompt: 1013, Completion: 5, Estimated: true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var targets []string
			for _, c := range tc.cut {
				targets = append(targets, c.Route.String())
			}
			rec := &usage.Record{Provider: tc.final.Provider, TargetModel: tc.final.Model, Tokens: tc.reported,
				Attempts: attempts(append(targets, tc.final.String())...)}
			billParts(rec, tc.cut, tc.last)
			var sum usage.Tokens
			for i, want := range tc.parts {
				require.NotNil(t, rec.Attempts[i].Tokens, "attempt %d", i)
				require.Equal(t, want, *rec.Attempts[i].Tokens, "attempt %d", i)
				sum = sum.Plus(want)
			}
			for i := range tc.cut {
				require.Equal(t, "stream_cut", rec.Attempts[i].Outcome)
			}
			require.Equal(t, "ok", rec.Attempts[len(tc.cut)].Outcome)
			require.Equal(t, sum, rec.Tokens, "the record is the sum of its parts")
		})
	}
}

// TestBillLost: a hedge's losing side that answered anyway is billed on its own
// attempt (hedge_lost) and added to the record; the winner's attempt is left to
// the record's own usage.
func TestBillLost(t *testing.T) {
	rec := &usage.Record{Provider: "b", TargetModel: "m", Tokens: usage.Tokens{Prompt: 17, Completion: 4},
		Attempts: []usage.Attempt{{Target: "b/m", Outcome: "ok"}, {Target: "p/m", Outcome: "ok"}}}
	billLost(rec, []router.CutUsage{{Route: router.Route{Provider: "p", Model: "m"}, PromptTokens: 100, CompletionTokens: 7}})
	require.Nil(t, rec.Attempts[0].Tokens, "the winner: the record's own usage")
	require.Equal(t, "hedge_lost", rec.Attempts[1].Outcome)
	require.Equal(t, &usage.Tokens{Prompt: 100, Completion: 7}, rec.Attempts[1].Tokens)
	require.Equal(t, usage.Tokens{Prompt: 117, Completion: 11}, rec.Tokens)

	// A chain that lists the same target twice: the winner's success there is
	// skipped, the loser's billed.
	same := &usage.Record{Provider: "b", TargetModel: "m", Tokens: usage.Tokens{Prompt: 17, Completion: 4},
		Attempts: []usage.Attempt{{Target: "b/m", Outcome: "ok"}, {Target: "b/m", Outcome: "ok"}}}
	billLost(same, []router.CutUsage{{Route: router.Route{Provider: "b", Model: "m"}, PromptTokens: 100, CompletionTokens: 7}})
	require.Nil(t, same.Attempts[0].Tokens)
	require.Equal(t, "hedge_lost", same.Attempts[1].Outcome)
	require.Equal(t, usage.Tokens{Prompt: 117, Completion: 11}, same.Tokens)

	// A losing stream billed its prompt estimate: the attempt and the record say
	// estimated.
	est := &usage.Record{Provider: "b", TargetModel: "m", Tokens: usage.Tokens{Prompt: 17, Completion: 4},
		Attempts: []usage.Attempt{{Target: "b/m", Outcome: "ok"}, {Target: "p/m", Outcome: "ok"}}}
	billLost(est, []router.CutUsage{{Route: router.Route{Provider: "p", Model: "m"}, PromptTokens: 20, Estimated: true}})
	require.Equal(t, &usage.Tokens{Prompt: 20, Estimated: true}, est.Attempts[1].Tokens)
	require.Equal(t, usage.Tokens{Prompt: 37, Completion: 4, Estimated: true}, est.Tokens)
}
