package usage

import (
	"encoding/json"
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
