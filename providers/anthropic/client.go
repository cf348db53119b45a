// Package anthropic is the provider for Anthropic's Messages API: POST
// {base_url}/v1/messages (chat translated with anthropicjson, or a /v1/messages
// body sent as it came), SSE streaming, GET {base_url}/v1/models, POST
// {base_url}/v1/messages/count_tokens.
package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/tracing"
)

// Defaults for Config's zero values.
const (
	// DefaultBaseURL is Anthropic's API root (paths add /v1/...).
	DefaultBaseURL = "https://api.anthropic.com"
	// DefaultVersion is the anthropic-version header sent when Config.Version is empty.
	DefaultVersion = "2023-06-01"
	// DefaultMaxTokens is max_tokens for a chat request that sets neither
	// max_tokens nor max_completion_tokens (Anthropic requires one).
	DefaultMaxTokens = 4096
)

// Config is what a Client needs.
type Config struct {
	// Name is the configured provider name.
	Name string
	// BaseURL is the API root without /v1 (default DefaultBaseURL; a trailing /v1
	// is dropped).
	BaseURL string
	// APIKey is sent as x-api-key; empty sends none.
	APIKey string
	// Version is the anthropic-version header (default DefaultVersion).
	Version string
	// Headers are added to every request (e.g. anthropic-beta).
	Headers map[string]string
	// DefaultMaxTokens is max_tokens for a chat request that sets neither
	// max_tokens nor max_completion_tokens (default DefaultMaxTokens).
	DefaultMaxTokens int
	// ConnectTimeout bounds dialling; ResponseHeaderTimeout the wait for headers;
	// Timeout a whole non-stream attempt; StreamIdleTimeout each gap between stream
	// reads after the first content; FirstTokenTimeout a stream's wait from
	// sending the request to its first event with content (a first-token timeout:
	// 504, a breaker failure, retried and failover-eligible). Zero means no limit.
	ConnectTimeout, ResponseHeaderTimeout, Timeout, StreamIdleTimeout, FirstTokenTimeout time.Duration
	// Log hears what an operator must act on (the upstream refusing Switchyard's
	// credentials); nil discards it.
	Log *slog.Logger
	// OnQuota hears the upstream's rate-limit headers saying a model has no room
	// left (see providers.Exhausted); nil ignores them.
	OnQuota providers.QuotaObserver
}

// Client calls one Anthropic upstream over a pooled HTTP client.
type Client struct {
	name    string
	baseURL string
	headers http.Header
	http    *http.Client
	cfg     Config
	log     *slog.Logger
	secrets providers.Secrets
}

// New returns a Client with its own connection pool.
func New(cfg Config) *Client {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.Version == "" {
		cfg.Version = DefaultVersion
	}
	if cfg.DefaultMaxTokens <= 0 {
		cfg.DefaultMaxTokens = DefaultMaxTokens
	}
	h := http.Header{}
	for k, v := range cfg.Headers {
		h.Set(k, v)
	}
	if cfg.APIKey != "" {
		h.Set("X-Api-Key", cfg.APIKey)
	}
	h.Set("Anthropic-Version", cfg.Version)
	h.Set("Content-Type", "application/json")
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Client{
		name:    cfg.Name,
		baseURL: apiRoot(cfg.BaseURL),
		headers: h,
		http:    providers.HTTPClient(cfg.ConnectTimeout, cfg.ResponseHeaderTimeout, cfg.OnQuota),
		cfg:     cfg,
		log:     log,
		secrets: providers.SecretsOf(cfg.BaseURL, cfg.Headers, cfg.APIKey),
	}
}

// apiRoot is base without a trailing slash or /v1: the paths add /v1/... (a
// base_url copied with /v1, as OpenAI's are written, still works).
func apiRoot(base string) string {
	base = strings.TrimRight(base, "/")
	return strings.TrimRight(strings.TrimSuffix(base, "/v1"), "/")
}

// Name returns the configured provider name.
func (c *Client) Name() string { return c.name }

// Close releases idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

func (c *Client) timeouts() providers.Timeouts {
	return providers.Timeouts{Attempt: c.cfg.Timeout, FirstToken: c.cfg.FirstTokenTimeout}
}

// newRequest builds a request to path ("/v1/messages") with the client's headers,
// the trace context and the attempt's request id and idempotency key (a may be nil).
func (c *Client) newRequest(ctx context.Context, method, path string, body []byte, a *providers.Attempt) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	if a != nil {
		ctx = providers.WithQuotaModel(ctx, a.Model) // whose rate-limit headers the answer carries
	}
	hr, err := http.NewRequestWithContext(ctx, method, c.baseURL+path, rd)
	if err != nil {
		// The parse error quotes the URL, userinfo and all: say it without it.
		return nil, &providers.Error{Provider: c.name, Status: http.StatusBadGateway, Transport: true,
			Message: fmt.Sprintf("provider %s has an unusable base_url %s", c.name, providers.DisplayURL(c.baseURL))}
	}
	for k, v := range c.headers {
		hr.Header[k] = v
	}
	if body == nil {
		hr.Header.Del("Content-Type")
	}
	tracing.Propagator.Inject(ctx, propagation.HeaderCarrier(hr.Header)) // nothing when not traced
	if a != nil {
		if a.IdempotencyKey != "" {
			hr.Header.Set("Idempotency-Key", a.IdempotencyKey)
		}
		if a.RequestID != "" {
			hr.Header.Set("X-Request-Id", a.RequestID)
		}
		if len(a.Betas) > 0 { // the client's opt-ins, after the configured ones
			hr.Header.Set("Anthropic-Beta", strings.Join(mergeBetas(hr.Header.Values("Anthropic-Beta"), a.Betas), ","))
		}
	}
	return hr, nil
}

// transportError wraps a failure to get an answer (see providers.TransportError).
func (c *Client) transportError(ctx context.Context, err error) error {
	e := providers.TransportError(ctx, c.name, c.timeouts(), err)
	if pe, ok := e.(*providers.Error); ok {
		c.secrets.Redact(pe) // the cause may quote the upstream's bytes
	}
	return e
}

// withTimeout bounds a non-stream attempt by Config.Timeout.
func (c *Client) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.cfg.Timeout > 0 {
		return context.WithTimeoutCause(ctx, c.cfg.Timeout, providers.ErrAttemptTimeout)
	}
	return ctx, func() {}
}

// post sends body to path and reads the whole answer: a 2xx body, or the upstream's error.
func (c *Client) post(ctx context.Context, path string, body []byte, a *providers.Attempt) ([]byte, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	hr, err := c.newRequest(ctx, http.MethodPost, path, body, a)
	if err != nil {
		return nil, err
	}
	return c.roundTrip(ctx, hr)
}

// roundTrip sends hr and reads the whole answer: a 2xx body, or the upstream's error.
func (c *Client) roundTrip(ctx context.Context, hr *http.Request) ([]byte, error) {
	resp, err := c.http.Do(hr)
	if err != nil {
		return nil, c.transportError(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		body, err := providers.ErrorBody(resp)
		if err != nil {
			return nil, c.transportError(ctx, err)
		}
		return nil, c.parseError(resp.StatusCode, resp.Header, body)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, providers.MaxResponseBytes+1))
	if err != nil {
		return nil, c.transportError(ctx, err)
	}
	if len(body) > providers.MaxResponseBytes {
		return nil, c.unreadable("returned an unreadable response",
			fmt.Errorf("larger than the %d MiB Switchyard reads", providers.MaxResponseBytes>>20))
	}
	return body, nil
}

func (c *Client) unreadable(what string, err error) *providers.Error {
	return c.secrets.Redact(providers.Unreadable(c.name, what, err))
}

// maxModelPages bounds the pages Models follows (1000 models at Anthropic's maximum page size).
const maxModelPages = 100

// Models lists the upstream's models from GET {base_url}/v1/models, following
// its pages (has_more, last_id → after_id).
func (c *Client) Models(ctx context.Context) ([]string, error) {
	var ids []string
	after := ""
	for range maxModelPages {
		path := "/v1/models?limit=1000"
		if after != "" {
			path += "&after_id=" + url.QueryEscape(after)
		}
		hr, err := c.newRequest(ctx, http.MethodGet, path, nil, nil)
		if err != nil {
			return nil, err
		}
		body, err := c.roundTrip(ctx, hr)
		if err != nil {
			return nil, err
		}
		var page struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
			HasMore bool   `json:"has_more"`
			LastID  string `json:"last_id"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return nil, c.unreadable("returned an unreadable model list", err)
		}
		for _, m := range page.Data {
			if m.ID != "" {
				ids = append(ids, m.ID)
			}
		}
		if !page.HasMore || page.LastID == "" || page.LastID == after {
			return ids, nil
		}
		after = page.LastID
	}
	return ids, nil
}

// mergeBetas is the configured beta values, then the client's that are not
// among them.
func mergeBetas(configured, client []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, list := range [][]string{configured, client} {
		for _, v := range list {
			for _, b := range strings.Split(v, ",") {
				if b = strings.TrimSpace(b); b != "" && !seen[b] {
					seen[b] = true
					out = append(out, b)
				}
			}
		}
	}
	return out
}
