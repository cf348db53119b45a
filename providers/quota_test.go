package providers

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestExhausted(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		header map[string]string
		limit  string
		wait   time.Duration
		ok     bool
	}{
		{"OpenAI requests spent", map[string]string{"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "6m0s"}, "requests", 6 * time.Minute, true},
		{"OpenAI tokens spent", map[string]string{"x-ratelimit-remaining-requests": "12", "x-ratelimit-remaining-tokens": "0",
			"x-ratelimit-reset-tokens": "250ms"}, "tokens", 250 * time.Millisecond, true},
		{"OpenAI room left", map[string]string{"x-ratelimit-remaining-requests": "1", "x-ratelimit-reset-requests": "1s"}, "", 0, false},
		{"OpenAI reset unreadable", map[string]string{"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "soon"}, "", 0, false},
		{"a hostile reset is capped", map[string]string{"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "9000h"}, "requests", time.Hour, true},
		{"Anthropic input tokens spent", map[string]string{"anthropic-ratelimit-input-tokens-remaining": "0",
			"anthropic-ratelimit-input-tokens-reset": "2026-12-01T12:00:20Z"}, "tokens", 20 * time.Second, true},
		{"Anthropic requests spent", map[string]string{"anthropic-ratelimit-requests-remaining": "0",
			"anthropic-ratelimit-requests-reset": "2026-12-01T12:01:00Z"}, "requests", time.Minute, true},
		{"Anthropic reset in the past", map[string]string{"anthropic-ratelimit-requests-remaining": "0",
			"anthropic-ratelimit-requests-reset": "2026-12-01T11:00:00Z"}, "", 0, false},
		{"Anthropic output tokens spent", map[string]string{"anthropic-ratelimit-output-tokens-remaining": "0",
			"anthropic-ratelimit-output-tokens-reset": "2026-12-01T12:00:05Z"}, "tokens", 5 * time.Second, true},
		{"no headers", nil, "", 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.header {
				h.Set(k, v)
			}
			limit, until, ok := Exhausted(h, now)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.limit, limit)
			if ok {
				require.Equal(t, tc.wait, until.Sub(now))
			}
		})
	}
}

// Exhausted reads the header map directly: its names must be the canonical
// form every received header is stored under.
func TestQuotaHeaderNamesAreCanonical(t *testing.T) {
	for _, q := range append(append([]quotaHeaders{}, openAIQuotas...), anthropicQuotas...) {
		for _, k := range []string{q.remaining, q.reset} {
			require.Equal(t, http.CanonicalHeaderKey(k), k)
		}
	}
}
