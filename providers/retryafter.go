package providers

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxRetryAfter is what a hint too long for a time.Duration saturates to (about 292
// years): any such hint exceeds max_backoff, so the retry sequence ends at once
// instead of an overflowed, negative wait being ignored and the request retried.
const MaxRetryAfter = time.Duration(math.MaxInt64)

// RetryAfter reads retry-after-ms (milliseconds) or Retry-After (seconds or an HTTP
// date) from h. It returns 0 ("no hint") when neither is present or readable, or
// when the wait is not positive; a retry-after-ms that is no hint gives way to
// Retry-After. Numbers may have a fraction or an exponent; NaN, negative, hex and
// other garbage are no hint, and a huge value (99999999999 seconds, 1e300, Inf)
// saturates to MaxRetryAfter. A date in the past is no hint.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if d := scaled(v, time.Millisecond); d > 0 {
			return d
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if isNumber(v) {
		return scaled(v, time.Second)
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 { // Sub saturates
			return d
		}
	}
	return 0
}

// scaled reads v as a count of unit, saturating at MaxRetryAfter; 0 if it is not a
// positive number.
func scaled(v string, unit time.Duration) time.Duration {
	if !isNumber(v) {
		return 0
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil && f == 0 { // out of range gives ±Inf with an error: keep it
		return 0
	}
	f *= float64(unit)
	switch {
	case math.IsNaN(f) || f <= 0:
		return 0
	case f >= float64(MaxRetryAfter): // float64(MaxInt64) is 2^63: converting it overflows
		return MaxRetryAfter
	}
	return time.Duration(f)
}

// isNumber accepts decimal numbers (digits, a point, an exponent, signs) and the
// infinities strconv spells; it refuses hex, underscores and anything else.
func isNumber(v string) bool {
	switch strings.ToLower(strings.TrimPrefix(v, "+")) {
	case "inf", "infinity":
		return true
	}
	for _, c := range v {
		if (c < '0' || c > '9') && c != '.' && c != 'e' && c != 'E' && c != '+' && c != '-' {
			return false
		}
	}
	return true
}
