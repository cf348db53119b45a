package e2e

import (
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// An upstream that echoes the provider's credentials (its key, a configured
// header's value) in an error answer or in a header never hands them to the
// client: they are redacted from every relayed header and from error bodies. A
// 2xx body is the upstream's, byte for byte.
func TestPassthroughRelaysNoProviderSecret(t *testing.T) {
	t.Parallel()
	const providerKey, orgSecret = "sk-raw-0123456789", "org-secret-0123456789"
	up := newRawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Debug-Auth", r.Header.Get("Authorization"))
		w.Header().Set("X-Debug-Org", "org="+r.Header.Get("X-Org-Secret"))
		switch r.URL.Path {
		case "/v1/models/denied":
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":{"message":"Incorrect API key provided: `+key+`; organization `+
				r.Header.Get("X-Org-Secret")+`","type":"invalid_request_error","code":"invalid_api_key"}}`)
		case "/v1/models/large":
			// A secret across the relay's 32 KiB reads, far into a long error body.
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, strings.Repeat("x", 32<<10-5)+key+strings.Repeat("y", 100<<10)+key)
		case "/v1/models/gzipped":
			w.Header().Set("Content-Encoding", "gzip")
			w.WriteHeader(http.StatusUnauthorized)
			zw := gzip.NewWriter(w)
			_, _ = io.WriteString(zw, "Incorrect API key provided: "+key)
			_ = zw.Close()
		case "/v1/models/brotli":
			w.Header().Set("Content-Encoding", "br")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, "not really brotli, but it holds "+key)
		default:
			_, _ = io.WriteString(w, `{"echo":"`+key+`"}`)
		}
	})
	g := start(t, "  master_key: sk-master\n", withYAML("  raw:\n    type: openai\n    base_url: "+up.URL+"\n    api_key: "+providerKey+"\n"+
		"    headers:\n      X-Org-Secret: "+orgSecret+"\n"))
	for _, tc := range []struct {
		name, path, body string
		status           int
	}{
		{"a 401 echoing the key", "raw/models/denied",
			`{"error":{"message":"Incorrect API key provided: [redacted]; organization [redacted]","type":"invalid_request_error","code":"invalid_api_key"}}`,
			http.StatusUnauthorized},
		{"a long error body", "raw/models/large",
			strings.Repeat("x", 32<<10-5) + "[redacted]" + strings.Repeat("y", 100<<10) + "[redacted]", http.StatusBadRequest},
		{"a gzipped error, relayed decoded", "raw/models/gzipped", "Incorrect API key provided: [redacted]", http.StatusUnauthorized},
		{"an error in an encoding not read: no body", "raw/models/brotli", "", http.StatusUnauthorized},
		{"a 200: its body byte for byte", "raw/models/echo", `{"echo":"` + providerKey + `"}`, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Accept-Encoding set: Go's client passes the answer on as it came.
			resp, body := pass(t, g, http.MethodGet, tc.path, "", map[string]string{"Accept-Encoding": "gzip, br"})
			require.Equal(t, tc.status, resp.StatusCode)
			if tc.status >= 400 {
				require.Empty(t, resp.Header.Get("Content-Encoding"), "a redacted error is relayed decoded")
			}
			require.True(t, tc.body == body, "the body: %.300q…", body)
			require.Equal(t, "Bearer [redacted]", resp.Header.Get("X-Debug-Auth"), "a header, whatever the status")
			require.Equal(t, "org=[redacted]", resp.Header.Get("X-Debug-Org"), "a configured header's value")
		})
	}
}
