package server

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"io"
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

// An error answer's encoded body is decoded to be redacted: an empty one is
// whole (a 429 with no body, labelled all the same), and deflate is read in both
// the forms servers send it (zlib, as HTTP says, and raw DEFLATE).
func TestRedactErrorDecodes(t *testing.T) {
	t.Parallel()
	secrets := providers.Secrets{"sk-0123456789"}
	text := []byte("bad key sk-0123456789")
	var gz, zl, raw bytes.Buffer
	gw := gzip.NewWriter(&gz)
	_, _ = gw.Write(text)
	require.NoError(t, gw.Close())
	zw := zlib.NewWriter(&zl)
	_, _ = zw.Write(text)
	require.NoError(t, zw.Close())
	fw, err := flate.NewWriter(&raw, flate.DefaultCompression)
	require.NoError(t, err)
	_, _ = fw.Write(text)
	require.NoError(t, fw.Close())
	for _, tc := range []struct {
		name, enc string
		body      []byte
		want      string
	}{
		{"empty gzip", "gzip", nil, ""},
		{"empty deflate", "deflate", nil, ""},
		{"gzip", "gzip", gz.Bytes(), "bad key [redacted]"},
		{"deflate as zlib", "deflate", zl.Bytes(), "bad key [redacted]"},
		{"deflate raw", "deflate", raw.Bytes(), "bad key [redacted]"},
		{"identity", "", text, "bad key [redacted]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{"Content-Length": {"0"}}
			if tc.enc != "" {
				h.Set("Content-Encoding", tc.enc)
			}
			got, err := io.ReadAll(redactError(h, bytes.NewReader(tc.body), secrets))
			require.NoError(t, err)
			require.Equal(t, tc.want, string(got))
			require.Empty(t, h.Get("Content-Encoding"), "relayed decoded")
		})
	}
}
