package server

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/providers"
)

func TestSplitPassthrough(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, name, path, raw string }{
		{"/p/openai/files", "openai", "/files", "/files"},
		{"/p/openai/files/a%2Fb/content", "openai", "/files/a/b/content", "/files/a%2Fb/content"},
		{"/p/openai", "openai", "", ""},
		{"/p/openai/", "openai", "", ""},
		{"/p/my%20p/x", "my p", "/x", "/x"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			u, err := url.Parse("http://h" + tc.in)
			require.NoError(t, err)
			name, p := splitPassthrough(u)
			require.Equal(t, tc.name, name)
			require.Equal(t, tc.path, p.Path)
			require.Equal(t, tc.raw, p.EscapedPath(), "escaped as the client sent it")
		})
	}
}

func TestRetriable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		method string
		key    bool
		want   bool
	}{
		{http.MethodGet, false, true}, {http.MethodHead, false, true}, {http.MethodOptions, false, true},
		{http.MethodPut, false, true}, {http.MethodDelete, false, true},
		{http.MethodPost, false, false}, {http.MethodPatch, false, false},
		{http.MethodPost, true, true}, {http.MethodPatch, true, true},
	} {
		t.Run(fmt.Sprintf("%s key=%v", tc.method, tc.key), func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, retriable(tc.method, tc.key))
		})
	}
}

func TestHeadersBothWays(t *testing.T) {
	t.Parallel()
	in := http.Header{
		"Authorization": {"Bearer sk-client"}, "X-Api-Key": {"sk-client"}, "Api-Key": {"sk-client"},
		"Connection": {"keep-alive, X-Hop"}, "X-Hop": {"1"}, "Keep-Alive": {"timeout=5"}, "Te": {"trailers"},
		"Trailer": {"X-T"}, "Transfer-Encoding": {"chunked"}, "Upgrade": {"h2c"}, "Proxy-Authorization": {"Basic x"},
		"Proxy-Connection": {"keep-alive"}, "Content-Type": {"application/json"}, "Idempotency-Key": {"k"},
	}
	require.Equal(t, http.Header{"Content-Type": {"application/json"}, "Idempotency-Key": {"k"}}, forwardHeaders(in))
	require.Equal(t, "Bearer sk-client", in.Get("Authorization"), "the client's headers are not modified")

	dst := http.Header{"X-Request-Id": {"ours"}}
	relayHeaders(dst, http.Header{"X-Request-Id": {"theirs"}, "Set-Cookie": {"a=b"}, "Openai-Organization": {"org"},
		"Openai-Project": {"proj"}, "Www-Authenticate": {"Bearer"}, "Connection": {"X-Up"}, "X-Up": {"1"},
		"Content-Type": {"text/event-stream"}, "X-Ratelimit-Limit-Requests": {"5000"},
		"X-Debug": {"key sk-provider-key", "none"}}, providers.Secrets{"sk-provider-key"})
	require.Equal(t, http.Header{"X-Request-Id": {"ours"}, "Content-Type": {"text/event-stream"},
		"X-Ratelimit-Limit-Requests": {"5000"}, "X-Debug": {"key [redacted]", "none"}}, dst, "the provider's secrets redacted")
}
