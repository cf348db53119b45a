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
	for _, kind := range []string{"requests", "tokens"} {
		if h.Get("X-Ratelimit-Remaining-"+kind) == "0" {
			if d, err := time.ParseDuration(h.Get("X-Ratelimit-Reset-" + kind)); err == nil && d > 0 {
				return kind, now.Add(min(d, maxQuotaWait)), true
			}
		}
	}
	for _, name := range []string{"requests", "tokens", "input-tokens", "output-tokens"} {
		if h.Get("Anthropic-Ratelimit-"+name+"-Remaining") == "0" {
			if t, err := time.Parse(time.RFC3339, h.Get("Anthropic-Ratelimit-"+name+"-Reset")); err == nil && t.After(now) {
				kind := "tokens"
				if name == "requests" {
					kind = "requests"
				}
				return kind, minTime(t, now.Add(maxQuotaWait)), true
			}
		}
	}
	return "", time.Time{}, false
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
