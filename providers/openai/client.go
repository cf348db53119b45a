// Package openai is the provider for OpenAI-compatible HTTP APIs (OpenAI, OpenRouter,
// vLLM, Ollama, Groq, xAI, ...): POST {base_url}/chat/completions, SSE streaming,
// GET {base_url}/models; and Azure OpenAI (see Azure).
package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/propagation"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/bufpool"
	"github.com/switchyard/switchyard/openaijson"
	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/tracing"
)

// MaxResponseBytes bounds what Switchyard reads of one upstream answer (see
// providers.MaxResponseBytes).
const MaxResponseBytes = providers.MaxResponseBytes

// Config is what a Client needs.
type Config struct {
	// Name is the configured provider name.
	Name string
	// BaseURL is the API root, e.g. https://api.openai.com/v1.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer" (Azure: the api-key header); empty sends none.
	APIKey string
	// Azure, when set, speaks Azure OpenAI's wire (see Azure): its URLs, api-key
	// header and api-version.
	Azure *Azure
	// Headers are added to every request.
	Headers map[string]string
	// ConnectTimeout bounds dialling; ResponseHeaderTimeout the wait for headers;
	// Timeout a whole non-stream attempt; StreamIdleTimeout each gap between stream
	// reads after the first byte. Zero means no limit.
	ConnectTimeout, ResponseHeaderTimeout, Timeout, StreamIdleTimeout time.Duration
	// FirstTokenTimeout bounds a stream's wait from sending the request to its first
	// event that carries content (headers and role-only chunks included); past it
	// the attempt fails as a first-token timeout (504, a breaker failure, retried
	// and failover-eligible). Zero means no limit.
	FirstTokenTimeout time.Duration
	// Log hears what an operator must act on (the upstream refusing Switchyard's
	// credentials); nil discards it.
	Log *slog.Logger
	// OnQuota hears the upstream's rate-limit headers saying a model has no room
	// left (see providers.Exhausted); nil ignores them.
	OnQuota providers.QuotaObserver
}

// Client calls one OpenAI-compatible upstream over a pooled HTTP client.
type Client struct {
	name    string
	baseURL string
	headers http.Header
	http    *http.Client
	cfg     Config
	log     *slog.Logger
	// secrets are the strings no error may carry to a client (see redact).
	secrets []string
	// azureV1 is set for Azure's v1 API (base_url ending in /openai/v1).
	azureV1 bool
}

// New returns a Client with its own connection pool.
func New(cfg Config) *Client {
	h := http.Header{}
	for k, v := range cfg.Headers {
		h.Set(k, v)
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	switch {
	case cfg.Azure != nil:
		base = azureBase(base)
		if cfg.APIKey != "" {
			h.Set("Api-Key", cfg.APIKey)
		}
		if cfg.Azure.BearerToken != "" {
			h.Set("Authorization", "Bearer "+cfg.Azure.BearerToken)
		}
	case cfg.APIKey != "":
		h.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	h.Set("Content-Type", "application/json")
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Client{
		name:    cfg.Name,
		baseURL: base,
		headers: h,
		http:    providers.HTTPClient(cfg.ConnectTimeout, cfg.ResponseHeaderTimeout, cfg.OnQuota),
		cfg:     cfg,
		log:     log,
		secrets: secretsOf(cfg),
		azureV1: cfg.Azure != nil && azureV1(base),
	}
}

// Name returns the configured provider name.
func (c *Client) Name() string { return c.name }

// Close releases idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// upstreamBody encodes the request as the upstream should receive it: the
// provider-local model name (Azure's v1 API: its deployment, see bodyModel), the
// stream flag, and every member the client sent (unknown ones included).
// req.Body is left untouched.
func (c *Client) upstreamBody(req *providers.Request, stream bool) providers.Pieces {
	up := openaijson.Upstream{Model: c.bodyModel(req.Model), Stream: stream}
	if stream {
		up.StreamOptions = req.Body.GetStreamOptions()
		if req.IncludeUsage && !up.StreamOptions.GetIncludeUsage() {
			yes := true
			up.StreamOptions = &pb.StreamOptions{IncludeUsage: &yes, Extra: req.Body.GetStreamOptions().GetExtra()}
		}
	}
	// One allocation of about the right size: the JSON is the proto's bytes plus
	// member names and escapes (growing the buffer as it fills copied a long
	// prompt some twenty times). A conversation kept as it arrived is not in it:
	// it is sent from the request's own buffer.
	size := req.Body.SizeVT() - len(req.Body.GetMessagesJson())
	return openaijson.AppendRequestPieces(make([]byte, 0, size+size/8+512), req.Body, up)
}

// newRequest builds a request to url (see endpoint) with the client's headers and
// the attempt's idempotency key and request id (req may be nil).
func (c *Client) newRequest(ctx context.Context, method, url string, body providers.Pieces, req *providers.Request) (*http.Request, error) {
	if req != nil {
		ctx = providers.WithQuotaModel(ctx, req.Model) // whose rate-limit headers the answer carries
	}
	hr, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		// The parse error quotes the URL, userinfo and all: say it without it.
		return nil, &providers.Error{Provider: c.name, Status: http.StatusBadGateway, Transport: true,
			Message: fmt.Sprintf("provider %s has an unusable base_url %s", c.name, providers.DisplayURL(c.baseURL))}
	}
	if body != nil {
		ref := bufpool.From(ctx) // the buffer the caller's body arrived in, which body may point into
		rd, ok := body.ReaderOf(ref)
		if !ok { // the request has ended: its buffer is let go
			return nil, &providers.Error{Provider: c.name, Status: http.StatusBadGateway, Transport: true,
				Message: "the request ended before its body was sent"}
		}
		hr.Body, hr.ContentLength = rd, body.Len()
		hr.GetBody = func() (io.ReadCloser, error) {
			if rd, ok := body.ReaderOf(ref); ok {
				return rd, nil
			}
			return nil, providers.ErrBodyReleased
		}
	}
	for k, v := range c.headers {
		hr.Header[k] = v
	}
	tracing.Propagator.Inject(ctx, propagation.HeaderCarrier(hr.Header)) // nothing when not traced
	if req != nil {
		if req.IdempotencyKey != "" {
			hr.Header.Set("Idempotency-Key", req.IdempotencyKey)
		}
		if req.RequestID != "" {
			hr.Header.Set("X-Request-Id", req.RequestID)
		}
	}
	return hr, nil
}

// transportError wraps a failure to get an answer (see providers.TransportError).
func (c *Client) transportError(ctx context.Context, err error) error {
	e := providers.TransportError(ctx, c.name, c.timeouts(), err)
	if pe, ok := e.(*providers.Error); ok {
		c.redact(pe) // the cause may quote the upstream's bytes
	}
	return e
}

var errAttemptTimeout = providers.ErrAttemptTimeout

// Chat sends a non-stream chat completion.
func (c *Client) Chat(ctx context.Context, req *providers.Request) (*pb.ChatCompletion, error) {
	if c.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, c.cfg.Timeout, errAttemptTimeout)
		defer cancel()
	}
	hr, err := c.newRequest(ctx, http.MethodPost, c.endpoint(req.Model, "chat/completions"), c.upstreamBody(req, false), req)
	if err != nil {
		return nil, err
	}
	body, err := c.roundTrip(ctx, hr)
	if err != nil {
		return nil, err
	}
	if e := c.hiddenError(body); e != nil {
		return nil, e
	}
	if raw := providers.RawAnswersOf(ctx); raw != nil {
		if out := readable(body); out != nil {
			raw.Keep(out, body)
			return out, nil
		}
	}
	out := &pb.ChatCompletion{}
	if err := openaijson.UnmarshalCompletion(body, out); err != nil {
		return nil, c.unreadable("returned an unreadable response", err)
	}
	if len(out.GetChoices()) == 0 {
		return nil, &providers.Error{Provider: c.name, Status: http.StatusBadGateway, Err: providers.ErrEmptyResponse,
			Message: "provider returned no choices", Code: "empty_response", Kind: providers.KindNoChoices}
	}
	if !providers.Answers(out) {
		return nil, &providers.Error{Provider: c.name, Status: http.StatusBadGateway, Err: providers.ErrEmptyResponse,
			Message: "provider returned choices with no message and no finish_reason", Code: "empty_response", Kind: providers.KindNoChoices}
	}
	normalize(out, req.Model)
	return out, nil
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
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return nil, c.transportError(ctx, err)
	}
	if len(body) > MaxResponseBytes {
		return nil, c.unreadable("returned an unreadable response", errTooLarge)
	}
	return body, nil
}

var errTooLarge = fmt.Errorf("larger than the %d MiB Switchyard reads", MaxResponseBytes>>20)

// unreadable is the error for upstream bytes that do not decode: the provider's
// fault, never the client's (502, a breaker failure, failover-eligible). The
// cause stays reachable for errors.Is, but the message says whose bytes they were.
func (c *Client) unreadable(what string, err error) *providers.Error {
	return c.redact(&providers.Error{Provider: c.name, Status: http.StatusBadGateway, Kind: providers.KindUnreadable,
		Code: "upstream_unreadable", Err: err, Message: fmt.Sprintf("provider %s %s: %v", c.name, what, err)})
}

// normalize fills members OpenAI always sends that a lenient upstream left out.
func normalize(out *pb.ChatCompletion, model string) {
	if out.Object == "" {
		out.Object = "chat.completion"
	}
	if out.Model == "" {
		out.Model = model
	}
	if out.Created == 0 {
		out.Created = time.Now().Unix()
	}
	for _, ch := range out.Choices {
		if ch.Message == nil {
			ch.Message = &pb.ChatMessage{}
		}
		if ch.Message.Role == "" {
			ch.Message.Role = "assistant"
		}
	}
	if out.Usage == nil {
		out.Usage = &pb.Usage{}
	}
}

// Models lists the upstream's models from GET {base_url}/models; for Azure, the
// models its deployments name (see azureModels), without a call.
func (c *Client) Models(ctx context.Context) ([]string, error) {
	if c.cfg.Azure != nil {
		return azureModels(c.cfg.Azure), nil
	}
	hr, err := c.newRequest(ctx, http.MethodGet, c.endpoint("", "models"), nil, nil)
	if err != nil {
		return nil, err
	}
	hr.Header.Del("Content-Type")
	body, err := c.roundTrip(ctx, hr)
	if err != nil {
		return nil, err
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, c.unreadable("returned an unreadable model list", err)
	}
	ids := make([]string, 0, len(list.Data))
	for _, m := range list.Data {
		if m.ID != "" {
			ids = append(ids, m.ID)
		}
	}
	return ids, nil
}
