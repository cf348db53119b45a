package usage

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"
)

// encodeAttempts writes what json.Marshal writes, by hand or not.
func TestEncodeAttemptsIsJSONMarshal(t *testing.T) {
	cost := 0.25
	cases := map[string][]Attempt{
		"one":          {{Target: "openai/gpt-4o", Outcome: "ok", Status: 200, Latency: 1234567 * time.Nanosecond}},
		"no status":    {{Target: "a/b", Outcome: "transport_error", Latency: time.Millisecond}},
		"zero latency": {{Target: "a/b", Outcome: "breaker_open"}},
		"long":         {{Target: "a/b", Outcome: "ok", Latency: 90 * time.Minute}},
		"several": {{Target: "a/b", Outcome: "status", Status: 503, Latency: 3 * time.Microsecond},
			{Target: "c/d", Outcome: "ok", Status: 200, Latency: 2 * time.Second}},
		"escaped target":   {{Target: `we"ird<&>/m`, Outcome: "ok"}},
		"non-ASCII":        {{Target: "é/m", Outcome: "ok"}},
		"control":          {{Target: "a\n/m", Outcome: "ok"}},
		"tokens of a part": {{Target: "a/b", Outcome: "stream_cut", Tokens: &Tokens{Prompt: 3, Completion: 4}, CostUSD: &cost}},
	}
	for name, as := range cases {
		t.Run(name, func(t *testing.T) {
			got := encodeAttempts(as)
			want, err := json.Marshal(as) // LatencyMS was set by encodeAttempts
			if err != nil || got != string(want) {
				t.Fatalf("got  %s\nwant %s (%v)", got, want, err)
			}
			if back := decodeAttempts(got); len(back) != len(as) || back[0].Target != as[0].Target {
				t.Fatalf("read back as %+v", back)
			}
		})
	}
}

// A cost that is not a number has no JSON: its attempt is stored without it,
// and the list is kept.
func TestEncodeAttemptsWithoutANumber(t *testing.T) {
	for _, c := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		t.Run(fmt.Sprint(c), func(t *testing.T) {
			ok := 0.5
			as := []Attempt{{Target: "a/b", Outcome: "stream_cut", Tokens: &Tokens{Prompt: 1}, CostUSD: &c},
				{Target: "c/d", Outcome: "ok", Status: 200, CostUSD: &ok}}
			back := decodeAttempts(encodeAttempts(as))
			if len(back) != 2 || back[0].CostUSD != nil || back[0].Tokens == nil || back[1].CostUSD == nil || *back[1].CostUSD != ok {
				t.Fatalf("stored as %+v", back)
			}
			if as[0].CostUSD == nil {
				t.Fatal("the record's own attempt lost its cost")
			}
		})
	}
}
