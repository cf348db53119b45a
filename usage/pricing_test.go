package usage_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/usage"
)

// wireUsage is every usage shape in the recordings: OpenAI chat, OpenAI/xAI
// Responses and Anthropic Messages.
type wireUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
	InputTokens        int64 `json:"input_tokens"`
	OutputTokens       int64 `json:"output_tokens"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	CacheRead  int64 `json:"cache_read_input_tokens"`
	CacheWrite int64 `json:"cache_creation_input_tokens"`
	// CostTicks is xAI's own bill, in 1e-10 USD.
	CostTicks *int64 `json:"cost_in_usd_ticks"`
}

func (w wireUsage) tokens(kind string) usage.Tokens {
	switch kind {
	case "anthropic":
		return usage.FromAnthropic(w.InputTokens, w.OutputTokens, w.CacheRead, w.CacheWrite)
	case "responses": // Responses API: output includes reasoning, total = input + output
		return usage.FromOpenAI(w.InputTokens, w.OutputTokens, w.TotalTokens, w.InputTokensDetails.CachedTokens, w.OutputTokensDetails.ReasoningTokens)
	}
	return usage.FromOpenAI(w.PromptTokens, w.CompletionTokens, w.TotalTokens, w.PromptTokensDetails.CachedTokens, w.CompletionTokensDetails.ReasoningTokens)
}

func readUsage(t *testing.T, file string) wireUsage {
	t.Helper()
	path := filepath.Join("testdata", "recordings", file)
	var body struct {
		Usage    *wireUsage `json:"usage"`
		Response struct {
			Usage *wireUsage `json:"usage"`
		} `json:"response"`
	}
	if strings.HasSuffix(file, ".txt") { // an SSE transcript: the last event with usage
		f, err := os.Open(path)
		require.NoError(t, err)
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<22)
		var last wireUsage
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok || !strings.Contains(line, `"usage"`) {
				continue
			}
			body.Usage, body.Response.Usage = nil, nil
			if json.Unmarshal([]byte(line), &body) == nil && body.Response.Usage != nil {
				last = *body.Response.Usage
			}
		}
		return last
	}
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &body))
	require.NotNil(t, body.Usage, file)
	return *body.Usage
}

func f(v float64) *float64 { return &v }

// TestCostOfRecordedTraffic prices the usage in real provider answers (cached
// and reasoning tokens included). xAI bills in its own answers
// (cost_in_usd_ticks): Switchyard's arithmetic must reach the same figure, to
// the tick, on the chat answer (reasoning counted beside completion_tokens) and on
// the Responses answers (reasoning inside output_tokens).
func TestCostOfRecordedTraffic(t *testing.T) {
	t.Parallel()
	prices := usage.Prices{
		"xai/grok-3-mini":                    {Input: 0.30, Output: 0.50, CachedInput: f(0.075)},
		"o3-mini":                            {Input: 1.10, Output: 4.40, CachedInput: f(0.55)},
		"gpt-4o-mini":                        {Input: 0.15, Output: 0.60, CachedInput: f(0.075)},
		"anthropic/claude-sonnet-4-20250514": {Input: 3, Output: 15, CachedInput: f(0.30), CacheWriteInput: f(3.75)},
	}
	cases := []struct {
		file, kind, provider, model string
		want                        usage.Tokens
		wantUSD                     float64
	}{
		{"xai_chat_completion.json", "chat", "xai", "grok-3-mini",
			usage.Tokens{Prompt: 10, Completion: 410, Cached: 3, Reasoning: 375}, (7*0.30 + 3*0.075 + 410*0.50) / 1e6},
		{"xai_responses.json", "responses", "xai", "grok-3-mini",
			usage.Tokens{Prompt: 17, Completion: 276, Cached: 3, Reasoning: 272}, (14*0.30 + 3*0.075 + 276*0.50) / 1e6},
		{"xai_responses_stream.txt", "responses", "xai", "grok-3-mini",
			usage.Tokens{Prompt: 17, Completion: 185, Cached: 3, Reasoning: 181}, (14*0.30 + 3*0.075 + 185*0.50) / 1e6},
		{"openai_chat_completion_reasoning.json", "chat", "openai", "o3-mini",
			usage.Tokens{Prompt: 13, Completion: 85, Reasoning: 64}, (13*1.10 + 85*4.40) / 1e6},
		{"openai_chat_completion.json", "chat", "openai", "gpt-4o-mini",
			usage.Tokens{Prompt: 17, Completion: 4}, (17*0.15 + 4*0.60) / 1e6},
		{"anthropic_messages_extended_thinking.json", "anthropic", "anthropic", "claude-sonnet-4-20250514",
			usage.Tokens{Prompt: 53, Completion: 211}, (53*3 + 211*15) / 1e6},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			w := readUsage(t, c.file)
			got := w.tokens(c.kind)
			require.Equal(t, c.want, got)
			cost := prices.Cost(c.provider, c.model, got)
			require.NotNil(t, cost)
			require.InDelta(t, c.wantUSD, *cost, 1e-15)
			if w.CostTicks != nil {
				require.Equal(t, *w.CostTicks, int64(*cost*1e10+0.5), "the provider's own bill, in 1e-10 USD")
			}
		})
	}
	t.Run("anthropic cache reads and writes", func(t *testing.T) {
		tk := usage.FromAnthropic(100, 10, 1000, 200)
		require.Equal(t, usage.Tokens{Prompt: 1300, Completion: 10, Cached: 1000, CacheWrite: 200}, tk)
		cost := prices.Cost("anthropic", "claude-sonnet-4-20250514", tk)
		require.InDelta(t, (100*3+1000*0.30+200*3.75+10*15)/1e6, *cost, 1e-15)
	})
	t.Run("no price is no cost", func(t *testing.T) {
		require.Nil(t, prices.Cost("ollama", "llama3", usage.Tokens{Prompt: 10, Completion: 10}))
	})
	t.Run("cached tokens without a cached price pay the input price", func(t *testing.T) {
		p := usage.Prices{"m": {Input: 2, Output: 4}}
		require.InDelta(t, (100*2+10*4)/1e6, *p.Cost("any", "m", usage.Tokens{Prompt: 100, Cached: 50, Completion: 10}), 1e-15)
	})
	t.Run("provider/model wins over the bare name", func(t *testing.T) {
		p := usage.Prices{"m": {Input: 1}, "a/m": {Input: 2}}
		pr, ok := p.Lookup("a", "m")
		require.True(t, ok)
		require.Equal(t, 2.0, pr.Input)
		pr, _ = p.Lookup("b", "m")
		require.Equal(t, 1.0, pr.Input)
	})
}

// TestLoadPrices reads YAML and JSON pricing files, flat or under "pricing", and
// refuses negative prices and unknown fields.
func TestLoadPrices(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
		return p
	}
	cases := []struct {
		name, file, text string
		want             usage.Prices
		err              string
	}{
		{"yaml", "p.yaml", "openai/gpt-4o:\n  input: 2.5\n  output: 10\n  cached_input: 1.25\n",
			usage.Prices{"openai/gpt-4o": {Input: 2.5, Output: 10, CachedInput: f(1.25)}}, ""},
		{"json under pricing", "p.json", `{"pricing": {"gpt-4o-mini": {"input": 0.15, "output": 0.6}}}`,
			usage.Prices{"gpt-4o-mini": {Input: 0.15, Output: 0.6}}, ""},
		{"negative", "n.yaml", "m: {input: -1, output: 1}\n", nil, "m.input: must be a non-negative"},
		{"unknown field", "u.yaml", "m: {input: 1, outptu: 1}\n", nil, "outptu"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := usage.LoadPrices(write(c.file, c.text))
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
	_, err := usage.LoadPrices(filepath.Join(dir, "missing.yaml"))
	require.Error(t, err)
}

// TestLedgerPricesLikeLookup: the ledger's index finds what Lookup finds, names
// with several slashes included, and allocates nothing but the cost.
func TestLedgerPricesLikeLookup(t *testing.T) {
	t.Parallel()
	p := usage.Prices{"a/m": {Input: 1}, "m": {Input: 2}, "meta-llama/Llama-3": {Input: 3}, "x/meta-llama/Llama-3": {Input: 4}}
	for _, c := range [][2]string{{"a", "m"}, {"b", "m"}, {"x", "meta-llama/Llama-3"}, {"y", "meta-llama/Llama-3"},
		{"meta-llama", "Llama-3"}, {"a", "none"}} {
		want, ok := p.Lookup(c[0], c[1])
		got := usage.LedgerCost(p, c[0], c[1], usage.Tokens{Prompt: 1e6})
		if !ok {
			require.Nil(t, got, c)
			continue
		}
		require.NotNil(t, got, c)
		require.Equal(t, want.Input, *got, c)
	}
}

// TestCostPerBilledAttempt: a record whose attempts carry their own tokens (a
// stream cut on one target and continued on another) is priced attempt by
// attempt at each target's price; what the attempts do not cover is priced at the
// final target; a part without a price adds nothing (its attempt's cost is nil),
// and with no part priced there is no cost (nil), never a made-up number.
func TestCostPerBilledAttempt(t *testing.T) {
	t.Parallel()
	prices := usage.Prices{"a/m": {Input: 1, Output: 2}, "b/m": {Input: 10, Output: 20}}
	tk := func(p, c int64) *usage.Tokens { return &usage.Tokens{Prompt: p, Completion: c} }
	tests := []struct {
		name     string
		attempts []usage.Attempt
		tokens   usage.Tokens
		final    string
		want     *float64
		parts    []*float64
	}{
		{name: "no parts: the final target's price", attempts: []usage.Attempt{{Target: "a/m"}},
			tokens: usage.Tokens{Prompt: 1e6, Completion: 1e6}, final: "b", want: ptr(30.0), parts: []*float64{nil}},
		{name: "each part at its own price", attempts: []usage.Attempt{{Target: "a/m", Tokens: tk(1e6, 1e6)}, {Target: "b/m", Tokens: tk(1e6, 0)}},
			tokens: usage.Tokens{Prompt: 2e6, Completion: 1e6}, final: "b", want: ptr(13.0), parts: []*float64{ptr(3.0), ptr(10.0)}},
		{name: "the rest at the final target", attempts: []usage.Attempt{{Target: "a/m", Tokens: tk(1e6, 0)}, {Target: "b/m"}},
			tokens: usage.Tokens{Prompt: 1e6, Completion: 1e6}, final: "b", want: ptr(21.0), parts: []*float64{ptr(1.0), nil}},
		{name: "an unpriced part adds nothing", attempts: []usage.Attempt{{Target: "c/m", Tokens: tk(5, 5)}, {Target: "a/m", Tokens: tk(1e6, 0)}},
			tokens: usage.Tokens{Prompt: 1e6 + 5, Completion: 5}, final: "a", want: ptr(1.0), parts: []*float64{nil, ptr(1.0)}},
		{name: "no part priced: no cost", attempts: []usage.Attempt{{Target: "c/m", Tokens: tk(5, 5)}, {Target: "d/m"}},
			tokens: usage.Tokens{Prompt: 10, Completion: 10}, final: "d", want: nil, parts: []*float64{nil, nil}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := &usage.Record{Provider: tc.final, TargetModel: "m", Tokens: tc.tokens, Attempts: tc.attempts}
			got := usage.RecordCost(prices, r)
			if tc.want == nil {
				require.Nil(t, got)
			} else {
				require.NotNil(t, got)
				require.InDelta(t, *tc.want, *got, 1e-9)
			}
			for i, want := range tc.parts {
				if want == nil {
					require.Nil(t, r.Attempts[i].CostUSD, "attempt %d", i)
					continue
				}
				require.NotNil(t, r.Attempts[i].CostUSD, "attempt %d", i)
				require.InDelta(t, *want, *r.Attempts[i].CostUSD, 1e-9, "attempt %d", i)
			}
		})
	}
}

func ptr(f float64) *float64 { return &f }
