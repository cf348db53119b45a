package providers

import (
	"net/url"
	"slices"
	"strings"
)

// minSecret is the shortest secret redacted: shorter strings would mangle
// ordinary words of a message and are no credential worth the name.
const minSecret = 8

// Secrets are the strings no error may carry to a client: an upstream may echo
// them (a key in its message, a header value, the base URL's password).
type Secrets []string

// SecretsOf lists what an upstream might echo that must never leave the process:
// the keys (API key, bearer token), the configured header values (Azure's
// api-key, anthropic-beta, ...) and the base URL's userinfo password. Longest
// first, so that a secret containing another goes whole.
func SecretsOf(baseURL string, headers map[string]string, keys ...string) Secrets {
	var out Secrets
	add := func(s string) {
		if len(s) >= minSecret && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, k := range keys {
		add(k)
	}
	for _, v := range headers {
		add(v)
	}
	if u, err := url.Parse(baseURL); err == nil && u.User != nil {
		p, _ := u.User.Password()
		add(p)
		add(u.User.String())
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// Redact removes every secret from every string of e a client can see (message,
// type, code, param: the REST body, the gRPC status message and its ErrorInfo
// reason and metadata are all made of these). Keys never leave the process.
func (s Secrets) Redact(e *Error) *Error {
	e.Message = s.String(e.Message)
	e.Type = s.String(e.Type)
	e.Code = s.String(e.Code)
	e.Param = s.String(e.Param)
	return e
}

// String is str with every secret replaced by "[redacted]".
func (s Secrets) String(str string) string {
	for _, k := range s {
		str = strings.ReplaceAll(str, k, "[redacted]")
	}
	return str
}
