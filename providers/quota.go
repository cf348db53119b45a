package providers

import (
	"context"
	"net/http"
	"time"
)

// Upstream rate-limit headers. OpenAI sends x-ratelimit-remaining-requests|tokens
// with x-ratelimit-reset-requests|tokens as durations ("1s", "6m0s"); Anthropic
// sends anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-remaining
// with -reset as an RFC 3339 time. An upstream that says nothing is left until
// some time is skipped until then, as the target's own limits are (see
// ObserveQuota and limits.Quota): the chain moves on instead of spending an
// upstream call on a certain 429.

// maxQuotaWait bounds how long an upstream's header can keep a target skipped.
const maxQuotaWait = time.Hour

// Exhausted reads h: which limit (requests or tokens) the upstream says is spent,
// and until when; ok is false when nothing is spent or the headers say nothing.
func Exhausted(h http.Header, now time.Time) (limit string, until time.Time, ok bool) {
	for _, q := range openAIQuotas {
		if first(h, q.remaining) == "0" {
			if d, err := time.ParseDuration(first(h, q.reset)); err == nil && d > 0 {
				return q.kind, now.Add(min(d, maxQuotaWait)), true
			}
		}
	}
	for _, q := range anthropicQuotas {
		if first(h, q.remaining) == "0" {
			if t, err := time.Parse(time.RFC3339, first(h, q.reset)); err == nil && t.After(now) {
				return q.kind, minTime(t, now.Add(maxQuotaWait)), true
			}
		}
	}
	return "", time.Time{}, false
}

// quotaHeaders are the headers of one limit, in canonical form (read from the
// map as they are: Header.Get canonicalises its key on every call, and this runs
// on every answer).
type quotaHeaders struct{ kind, remaining, reset string }

var (
	openAIQuotas = []quotaHeaders{
		{"requests", "X-Ratelimit-Remaining-Requests", "X-Ratelimit-Reset-Requests"},
		{"tokens", "X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Reset-Tokens"},
	}
	anthropicQuotas = []quotaHeaders{
		{"requests", "Anthropic-Ratelimit-Requests-Remaining", "Anthropic-Ratelimit-Requests-Reset"},
		{"tokens", "Anthropic-Ratelimit-Tokens-Remaining", "Anthropic-Ratelimit-Tokens-Reset"},
		{"tokens", "Anthropic-Ratelimit-Input-Tokens-Remaining", "Anthropic-Ratelimit-Input-Tokens-Reset"},
		{"tokens", "Anthropic-Ratelimit-Output-Tokens-Remaining", "Anthropic-Ratelimit-Output-Tokens-Reset"},
	}
)

// first is h.Get(key) for a key already canonical.
func first(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

type quotaModelKey struct{}

// WithQuotaModel names the model a request is for, for ObserveQuota.
func WithQuotaModel(ctx context.Context, model string) context.Context {
	return context.WithValue(ctx, quotaModelKey{}, model)
}

// QuotaObserver hears that an upstream has no room left for model until until.
type QuotaObserver func(model, limit string, until time.Time)

// ObserveQuota wraps a provider's transport so that every answer's rate-limit
// headers reach observe (nil: next itself).
func ObserveQuota(next http.RoundTripper, observe QuotaObserver) http.RoundTripper {
	if observe == nil {
		return next
	}
	return &quotaTransport{next: next, observe: observe}
}

type quotaTransport struct {
	next    http.RoundTripper
	observe QuotaObserver
}

func (q *quotaTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := q.next.RoundTrip(r)
	if err == nil {
		if limit, until, ok := Exhausted(resp.Header, time.Now()); ok {
			model, _ := r.Context().Value(quotaModelKey{}).(string)
			q.observe(model, limit, until)
		}
	}
	return resp, err
}

// CloseIdleConnections passes on to the wrapped transport.
func (q *quotaTransport) CloseIdleConnections() {
	if c, ok := q.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
