package server

import (
	"net/http"
	"net/textproto"
	"strings"

	"github.com/switchyard/switchyard/providers"
)

// hopByHop are the headers that belong to one connection, not to the message
// (RFC 9110 §7.6.1), removed in both directions as a proxy must, with the ones a
// Connection header names.
var hopByHop = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// clientCredentials are the request headers that may carry the client's
// Switchyard key (OpenAI's, Anthropic's and Azure's styles): never sent upstream,
// where the provider's own credentials go instead.
var clientCredentials = []string{"Authorization", "X-Api-Key", "Api-Key"}

// providerPrivate are the response headers that belong to Switchyard's account
// with the provider, not to the client: its cookies (a session of Switchyard's
// credentials, e.g. a CDN's bot cookie), the organization and project its key
// belongs to, and the challenge for its credentials.
var providerPrivate = []string{"Set-Cookie", "Set-Cookie2", "Openai-Organization", "Openai-Project", "Www-Authenticate"}

// forwardHeaders is what of the client's request headers goes upstream: all but
// hop-by-hop ones (Proxy-* included) and the client's credentials. Host is not a
// header here: the upstream's own is set from its URL.
func forwardHeaders(in http.Header) http.Header {
	out := in.Clone()
	dropHopByHop(out)
	for _, h := range clientCredentials {
		out.Del(h)
	}
	return out
}

// relayHeaders copies the upstream's response headers to dst: all but hop-by-hop
// ones and providerPrivate, each value with the provider's secrets redacted (an
// upstream may echo its credentials in a debugging header). Switchyard's own
// (X-Request-Id, X-Switchyard-Target) are already in dst and win.
func relayHeaders(dst, src http.Header, secrets providers.Secrets) {
	h := src.Clone()
	dropHopByHop(h)
	for _, k := range providerPrivate {
		h.Del(k)
	}
	for k, v := range h {
		if _, ours := dst[k]; ours {
			continue
		}
		for i := range v {
			v[i] = secrets.String(v[i])
		}
		dst[k] = v
	}
}

// dropHopByHop removes the hop-by-hop headers, those a Connection header names,
// and every Proxy-* header.
func dropHopByHop(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			if name = textproto.TrimString(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, k := range hopByHop {
		h.Del(k)
	}
	for k := range h {
		if strings.HasPrefix(k, "Proxy-") {
			delete(h, k)
		}
	}
}
