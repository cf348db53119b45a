package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard/switchyard/anthropicjson"
	"github.com/switchyard/switchyard/providers"
)

// parseError builds a providers.Error from an error status and Anthropic's error
// body {"type":"error","error":{"type","message"}}: Code and Type are Anthropic's
// error type (overloaded_error, rate_limit_error, ...), the status is the
// upstream's (529 included: a 5xx, retried and failed over like any), and
// retry-after is kept. A 401/403 refused Switchyard's own key (502, see
// providers.RefusedCredentials).
func (c *Client) parseError(status int, h http.Header, body []byte) *providers.Error {
	e := &providers.Error{Provider: c.name, Status: status, RetryAfter: providers.RetryAfter(h, time.Now())}
	if typ, msg, ok := anthropicjson.ParseError(body); ok {
		e.Type, e.Code, e.Message = typ, typ, msg
	}
	if e.Message == "" {
		e.Message = strings.TrimSpace(string(body))
		if e.Message == "" || len(e.Message) > 512 || !json.Valid(body) && strings.ContainsAny(e.Message, "<>") {
			e.Message = "provider " + c.name + " returned " + strconv.Itoa(status) + " " + http.StatusText(status)
		}
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		c.log.Error("the provider refused Switchyard's credentials: check its api_key", "provider", c.name,
			"status", status, "error", c.secrets.String(e.Message))
		providers.RefusedCredentials(e)
	case !providers.IsErrorStatus(status):
		c.log.Error("the provider answered a status that is neither an answer nor an error: check its base_url",
			"provider", c.name, "status", status, "location", c.secrets.String(h.Get("Location")))
		providers.UnexpectedStatus(e)
	}
	return c.secrets.Redact(e)
}

// hiddenError is the error Anthropic reported inside a 200 (an error body, or an
// "error" event of a stream): the status its type has (overloaded_error 529,
// api_error 500, ...).
func (c *Client) hiddenError(ae *anthropicjson.APIError) *providers.Error {
	e := &providers.Error{Provider: c.name, Status: anthropicjson.StatusForType(ae.Type), Type: ae.Type, Code: ae.Type,
		Message: ae.Message, Kind: providers.KindHiddenError, Err: ae}
	if e.Message == "" {
		e.Message = "provider " + c.name + " returned an error inside a 200 response"
	}
	if e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden {
		providers.RefusedCredentials(e)
	}
	return c.secrets.Redact(e)
}

// answerError maps what anthropicjson says of a 200 answer: an *APIError is a
// hidden error, anything else unreadable (502).
func (c *Client) answerError(what string, err error) error {
	var ae *anthropicjson.APIError
	if errors.As(err, &ae) {
		return c.hiddenError(ae)
	}
	if errors.Is(err, anthropicjson.ErrEmptyMessage) {
		return &providers.Error{Provider: c.name, Status: http.StatusBadGateway, Err: providers.ErrEmptyResponse,
			Message: "provider " + c.name + " returned a message with no content and no stop_reason", Code: "empty_response", Kind: providers.KindNoChoices}
	}
	return c.unreadable(what, err)
}

// unsupported is the 400 for a chat request member Anthropic's Messages API has
// no meaning for: refused, naming the member and the provider, never dropped.
func (c *Client) unsupported(err error) error {
	var ue *anthropicjson.UnsupportedError
	if !errors.As(err, &ue) {
		return &providers.Error{Provider: c.name, Status: http.StatusBadRequest, Type: "invalid_request_error",
			Message: fmt.Sprintf("provider %s (type anthropic) cannot take this request: %v", c.name, err), Err: err}
	}
	return &providers.Error{Provider: c.name, Status: http.StatusBadRequest, Type: "invalid_request_error",
		Code: "unsupported_parameter", Param: ue.Param, Err: err,
		Message: fmt.Sprintf("%v (provider %s speaks Anthropic's Messages API)", err, c.name)}
}
