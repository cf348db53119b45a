package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseSince(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"24h", 24 * time.Hour, true},
		{"90m", 90 * time.Minute, true},
		{"7d", 7 * 24 * time.Hour, true},
		{"1d12h", 36 * time.Hour, true},
		{"30d", 30 * 24 * time.Hour, true},
		{"0d1h", time.Hour, true},
		{"0d", 0, false},
		{"0s", 0, false},
		{"-1h", 0, false},
		{"1d-1h", 0, false},
		{"d", 0, false},
		{"1.5d", 0, false},
		{"-1d", 0, false},
		{"yesterday", 0, false},
		{"99999999d", 0, false},
		{"", 0, false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := parseSince(tc.in)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.want, got)
		})
	}
}

// A range that ends before it starts is the caller's mistake: a 400 naming
// start_time, not an empty answer.
func TestUsageRange(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, start, end string
		ok               bool
	}{
		{"start before end", "2026-12-01T00:00:00Z", "2026-12-02T00:00:00Z", true},
		{"start before now", "2026-12-01T00:00:00Z", "", true},
		{"start after end", "2026-12-02T00:00:00Z", "2026-12-01T00:00:00Z", false},
		{"start at end", "2026-12-01T00:00:00Z", "2026-12-01T00:00:00Z", false},
		{"start after now", "2026-12-04T00:00:00Z", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := usageRange(tc.start, tc.end, "", now)
			if tc.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, "start_time must be before")
		})
	}
}
