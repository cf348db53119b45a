package providers_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/providers"
)

func TestRetryAfterParsing(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		header []string // key, value pairs
		want   time.Duration
	}{
		{"none", nil, 0},
		{"seconds", []string{"Retry-After", "3"}, 3 * time.Second},
		{"fractional seconds", []string{"Retry-After", "1.5"}, 1500 * time.Millisecond},
		{"zero seconds", []string{"Retry-After", "0"}, 0},
		{"http date", []string{"Retry-After", now.Add(10 * time.Second).Format(http.TimeFormat)}, 10 * time.Second},
		{"http date in the past", []string{"Retry-After", now.Add(-time.Hour).Format(http.TimeFormat)}, 0},
		{"http date year 9999 saturates", []string{"Retry-After", "Fri, 31 Dec 9999 23:59:59 GMT"}, providers.MaxRetryAfter},
		{"milliseconds win", []string{"retry-after-ms", "120", "Retry-After", "9"}, 120 * time.Millisecond},
		{"garbage", []string{"Retry-After", "soon"}, 0},

		{"seconds 99999999999 saturates", []string{"Retry-After", "99999999999"}, providers.MaxRetryAfter},
		{"seconds 1e300 saturates", []string{"Retry-After", "1e300"}, providers.MaxRetryAfter},
		{"seconds 1e400 (out of float range) saturates", []string{"Retry-After", "1e400"}, providers.MaxRetryAfter},
		{"seconds Inf saturates", []string{"Retry-After", "Inf"}, providers.MaxRetryAfter},
		{"seconds +Infinity saturates", []string{"Retry-After", "+Infinity"}, providers.MaxRetryAfter},
		{"seconds just below the limit", []string{"Retry-After", "9223372036"}, 9223372036 * time.Second},
		{"seconds NaN is no hint", []string{"Retry-After", "NaN"}, 0},
		{"seconds -Inf is no hint", []string{"Retry-After", "-Inf"}, 0},
		{"negative seconds are no hint", []string{"Retry-After", "-5"}, 0},
		{"hex is no hint", []string{"Retry-After", "0x10"}, 0},
		{"underscores are no hint", []string{"Retry-After", "1_0"}, 0},
		{"malformed number is no hint", []string{"Retry-After", "1.2.3"}, 0},

		{"ms 99999999999999999 saturates", []string{"retry-after-ms", "99999999999999999"}, providers.MaxRetryAfter},
		{"ms 1e300 saturates", []string{"retry-after-ms", "1e300"}, providers.MaxRetryAfter},
		{"ms Inf saturates", []string{"retry-after-ms", "Inf"}, providers.MaxRetryAfter},
		{"ms NaN gives way to Retry-After", []string{"retry-after-ms", "NaN", "Retry-After", "2"}, 2 * time.Second},
		{"ms NaN alone is no hint", []string{"retry-after-ms", "NaN"}, 0},
		{"ms negative gives way to Retry-After", []string{"retry-after-ms", "-1", "Retry-After", "2"}, 2 * time.Second},
		{"ms garbage gives way to Retry-After", []string{"retry-after-ms", "x", "Retry-After", "2"}, 2 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			for i := 0; i+1 < len(tc.header); i += 2 {
				h.Set(tc.header[i], tc.header[i+1])
			}
			got := providers.RetryAfter(h, now)
			require.Equal(t, tc.want, got)
			require.GreaterOrEqual(t, got, time.Duration(0), "a hint is never negative")
		})
	}
}
