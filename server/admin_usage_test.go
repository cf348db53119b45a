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
