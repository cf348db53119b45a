package openai

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard/switchyard/providers"
)

// errorBody is the lenient shape of an upstream error: OpenAI's
// {"error":{"message","type","param","code"}}, a bare {"error":"text"}, or {"message":"text"}.
type errorBody struct {
	Error   json.RawMessage `json:"error"`
	Message string          `json:"message"`
}

type errorDetail struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Param   json.RawMessage `json:"param"`
	Code    json.RawMessage `json:"code"`
}

// parseError builds a providers.Error from an error status and body.
func (c *Client) parseError(status int, h http.Header, body []byte) *providers.Error {
	e := &providers.Error{Provider: c.name, Status: status, RetryAfter: providers.RetryAfter(h, time.Now())}
	fillError(e, body)
	if e.Message == "" {
		e.Message = strings.TrimSpace(string(body))
		if e.Message == "" || len(e.Message) > 512 || !json.Valid(body) && strings.ContainsAny(e.Message, "<>") {
			e.Message = "provider " + c.name + " returned " + strconv.Itoa(status) + " " + http.StatusText(status)
		}
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		c.authFailure(e)
	case !providers.IsErrorStatus(status):
		c.unexpectedStatus(e, h)
	}
	return c.redact(e)
}

// authFailure rewrites an upstream 401/403: it refused Switchyard's own key, not
// the client's, so the client sees 502 naming the provider (an SDK must not
// report its caller's key as invalid) and the chain fails over (the target is
// out of service until an operator fixes the key). Retries and breakers still
// see the upstream's status (Answered): a refused key is not retried.
func (c *Client) authFailure(e *providers.Error) {
	c.log.Error("the provider refused Switchyard's credentials: check its api_key", "provider", c.name,
		"status", e.Status, "error", c.redactString(e.Message))
	providers.RefusedCredentials(e)
}

// unexpectedStatus rewrites an answer that is neither a success nor an error
// (providers.UnexpectedStatus), logged with where a redirect pointed.
func (c *Client) unexpectedStatus(e *providers.Error, h http.Header) {
	c.log.Error("the provider answered a status that is neither an answer nor an error: check its base_url",
		"provider", c.name, "status", e.Status, "location", c.redactString(h.Get("Location")))
	providers.UnexpectedStatus(e)
}

// fillError copies message, type, param and code from an error body into e. It
// reports whether body had an "error" member.
func fillError(e *providers.Error, body []byte) bool {
	var eb errorBody
	if json.Unmarshal(body, &eb) != nil {
		return false
	}
	if len(eb.Error) == 0 || string(eb.Error) == "null" {
		e.Message = eb.Message
		return false
	}
	var s string
	if json.Unmarshal(eb.Error, &s) == nil {
		e.Message = s
		return true
	}
	var d errorDetail
	if json.Unmarshal(eb.Error, &d) != nil {
		return true
	}
	e.Message, e.Type = d.Message, d.Type
	e.Param = rawString(d.Param)
	e.Code = rawString(d.Code)
	return true
}

// rawString renders a JSON string or number as text; null becomes "".
func rawString(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// hiddenError turns a 200 body whose top level is {"error": …} into the error it
// is: a status in error.code (number or numeric string) is kept, anything else is
// 502. It does so with choices beside the error too (OpenRouter's mid-stream
// error is a chunk with both, its choice finished with "error"), and for a
// choice finished with "error" and no error member.
func (c *Client) hiddenError(body []byte) *providers.Error {
	if !looksLikeError(body) {
		return nil
	}
	e := &providers.Error{Provider: c.name, Status: http.StatusBadGateway, Kind: providers.KindHiddenError}
	fillError(e, body)
	if n, err := strconv.Atoi(e.Code); err == nil && n >= 400 && n <= 599 {
		e.Status = n
	}
	if e.Message == "" {
		e.Message = "provider " + c.name + " returned an error inside a 200 response"
	}
	return c.redact(e)
}

// looksLikeError reports whether a body is an error: a top-level error that is
// not null, or a choice whose finish_reason is "error". A cheap pre-check runs
// first, on every response and stream event.
func looksLikeError(body []byte) bool {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' || !bytes.Contains(trimmed, []byte(`"error"`)) {
		return false
	}
	var probe struct {
		Error   json.RawMessage `json:"error"`
		Choices []struct {
			FinishReason json.RawMessage `json:"finish_reason"`
		} `json:"choices"`
	}
	if json.Unmarshal(body, &probe) != nil {
		var head struct { // choices of another shape: the error member alone decides
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal(body, &head) != nil {
			return false
		}
		probe.Error = head.Error
	}
	if len(probe.Error) > 0 && string(probe.Error) != "null" {
		return true
	}
	for _, ch := range probe.Choices {
		if string(ch.FinishReason) == `"error"` {
			return true
		}
	}
	return false
}

// secretsOf lists what an upstream might echo that must never leave the
// process (see providers.SecretsOf).
func secretsOf(cfg Config) []string {
	keys := []string{cfg.APIKey}
	if cfg.Azure != nil {
		keys = append(keys, cfg.Azure.BearerToken)
	}
	return providers.SecretsOf(cfg.BaseURL, cfg.Headers, keys...)
}

// redact removes every secret from every string of e a client can see (message,
// type, code, param: the REST body, the gRPC status message and its ErrorInfo
// reason and metadata are all made of these). Keys never leave the process.
func (c *Client) redact(e *providers.Error) *providers.Error {
	return providers.Secrets(c.secrets).Redact(e)
}

func (c *Client) redactString(s string) string { return providers.Secrets(c.secrets).String(s) }
