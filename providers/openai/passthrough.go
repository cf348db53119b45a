package openai

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"go.opentelemetry.io/otel/propagation"

	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/tracing"
)

// Forward sends r to {base_url}{r.URL.Path}?{r.URL.RawQuery} (path and query as
// the client escaped them) with r's headers and body, plus the provider's
// configured headers and credentials (Authorization, or Azure's api-key), which
// replace any of the same name; its own Content-Type is not added: the client's
// stands. The answer is returned whatever its status, unread, and redirects are
// not followed (they are the client's to follow). The attempt timeout (timeout)
// does not apply, as the answer may be a stream of any length; connect and
// response header timeouts do.
func (c *Client) Forward(ctx context.Context, a providers.Attempt, r *http.Request) (*http.Response, error) {
	u, err := url.Parse(c.baseURL + r.URL.EscapedPath())
	if err != nil {
		return nil, &providers.Error{Provider: c.name, Status: http.StatusBadGateway, Transport: true,
			Message: fmt.Sprintf("provider %s has an unusable base_url %s", c.name, providers.DisplayURL(c.baseURL))}
	}
	u.RawQuery = r.URL.RawQuery
	hr := r.Clone(ctx)
	hr.URL, hr.Host, hr.RequestURI = u, "", ""
	for k, v := range c.headers {
		if k != "Content-Type" {
			hr.Header[k] = v
		}
	}
	if hr.Header.Get("Accept-Encoding") == "" {
		// Else the transport asks for gzip and unzips the answer itself: the
		// client would not get the upstream's bytes (nor its Content-Length).
		hr.Header.Set("Accept-Encoding", "identity")
	}
	if a.RequestID != "" {
		hr.Header.Set("X-Request-Id", a.RequestID)
	}
	tracing.Propagator.Inject(ctx, propagation.HeaderCarrier(hr.Header))
	resp, err := c.http.Transport.RoundTrip(hr)
	if err != nil {
		return nil, c.transportError(ctx, err)
	}
	return resp, nil
}

// Secrets are the provider's credentials an upstream might echo (secretsOf),
// for the relay of a passthrough answer to redact.
func (c *Client) Secrets() providers.Secrets { return c.secrets }
