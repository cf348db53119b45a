package e2e

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// rawUpstream is a provider API that is not chat: it records every request but
// model discovery and answers with handle.
type rawUpstream struct {
	URL   string // base_url, ends in /v1
	mu    sync.Mutex
	reqs  []*http.Request
	body  []string
	count atomic.Int32
}

func newRawUpstream(t *testing.T, handle func(w http.ResponseWriter, r *http.Request)) *rawUpstream {
	t.Helper()
	u := &rawUpstream{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model","owned_by":"x"}]}`)
			return
		}
		b, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.reqs, u.body = append(u.reqs, r), append(u.body, string(b))
		u.mu.Unlock()
		u.count.Add(1)
		handle(w, r)
	}))
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	u.URL = srv.URL + "/v1"
	return u
}

func (u *rawUpstream) last() (*http.Request, string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.reqs[len(u.reqs)-1], u.body[len(u.body)-1]
}

// startPassthrough runs Switchyard (master key sk-master) with provider "raw" at
// up (key sk-raw, 2 retries 1ms apart) and extra provider YAML.
func startPassthrough(t *testing.T, up *rawUpstream, serverYAML, extra string) *gateway {
	t.Helper()
	return start(t, "  master_key: sk-master\n"+serverYAML, withYAML("  raw:\n    type: openai\n    base_url: "+up.URL+"\n    api_key: sk-raw\n"+
		"    resilience:\n      retry:\n        max_retries: 2\n        initial_backoff: 1ms\n        max_backoff: 5ms\n"+extra))
}

// pass sends a request to /p/{path} with the master key.
func pass(t *testing.T, g *gateway, method, path, body string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, strings.TrimSuffix(g.base, "/v1")+"/p/"+path, strings.NewReader(body))
	require.NoError(t, err)
	if body == "" {
		req.Body = http.NoBody
	}
	req.Header.Set("Authorization", "Bearer sk-master")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

func TestPassthroughGETHeadersAndCredentials(t *testing.T) {
	t.Parallel()
	up := newRawUpstream(t, func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Set-Cookie", "__cf_bm=secret; path=/")
		h.Set("Openai-Organization", "org-switchyard")
		h.Set("X-Ratelimit-Remaining-Requests", "99")
		h.Set("Connection", "X-Up-Hop")
		h.Set("X-Up-Hop", "1")
		h.Set("Keep-Alive", "timeout=5")
		_, _ = io.WriteString(w, `{"object":"list", "data":[ ]}`)
	})
	g := startPassthrough(t, up, "", "")
	resp, body := pass(t, g, http.MethodGet, "raw/files?limit=2&after=a%20b&limit=3", "", map[string]string{
		"X-Api-Key": "sk-master", "Connection": "X-Hop", "X-Hop": "1", "Keep-Alive": "timeout=9",
		"Proxy-Authorization": "Basic eDp5", "X-Custom": "kept", "Accept-Encoding": "gzip"})
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Equal(t, `{"object":"list", "data":[ ]}`, body, "the body byte for byte")
	require.Equal(t, "99", resp.Header.Get("X-Ratelimit-Remaining-Requests"), "the upstream's headers are relayed")
	require.Empty(t, resp.Header.Values("Set-Cookie"), "the provider's cookies are Switchyard's, not the client's")
	require.Empty(t, resp.Header.Get("Openai-Organization"), "the organization of Switchyard's key stays private")
	require.Empty(t, resp.Header.Get("X-Up-Hop"), "a header the upstream's Connection names is hop-by-hop")
	require.Empty(t, resp.Header.Get("Keep-Alive"))
	require.Equal(t, "raw", resp.Header.Get("X-Switchyard-Target"))
	require.NotEmpty(t, resp.Header.Get("X-Request-Id"))

	r, _ := up.last()
	require.Equal(t, "/v1/files", r.URL.Path)
	require.Equal(t, "limit=2&after=a%20b&limit=3", r.URL.RawQuery, "the query byte for byte")
	require.Equal(t, "Bearer sk-raw", r.Header.Get("Authorization"), "the provider's key is injected")
	require.Empty(t, r.Header.Get("X-Api-Key"), "the client's key never reaches the upstream")
	require.Empty(t, r.Header.Get("X-Hop"), "a header the client's Connection names is hop-by-hop")
	require.Empty(t, r.Header.Get("Keep-Alive"))
	require.Empty(t, r.Header.Get("Proxy-Authorization"))
	require.Equal(t, "kept", r.Header.Get("X-Custom"))
	require.Equal(t, "gzip", r.Header.Get("Accept-Encoding"), "the client's own accept-encoding stands")
	require.Equal(t, strings.TrimSuffix(strings.TrimPrefix(up.URL, "http://"), "/v1"), r.Host, "Host is the upstream's")
	require.Equal(t, resp.Header.Get("X-Request-Id"), r.Header.Get("X-Request-Id"))
	for _, vals := range r.Header {
		for _, v := range vals {
			require.NotContains(t, v, "sk-master", "the client's key appears in no header")
		}
	}
	// The line is written as the call ends, which may be just after the client has read the answer.
	require.Eventually(t, func() bool { return strings.Contains(g.logs.String(), `"method":"Forward"`) },
		5*time.Second, 10*time.Millisecond, "the request has its line")
}

func TestPassthroughRetriesOnlyWhatIsIdempotent(t *testing.T) {
	t.Parallel()
	up := newRawUpstream(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"error":{"message":"overloaded"}}`)
	})
	g := startPassthrough(t, up, "", "")
	cases := []struct {
		name, method string
		header       map[string]string
		attempts     int32
	}{
		{"POST without Idempotency-Key: one attempt", http.MethodPost, nil, 1},
		{"POST with Idempotency-Key: retried", http.MethodPost, map[string]string{"Idempotency-Key": "k-1"}, 3},
		{"GET: retried", http.MethodGet, nil, 3},
		{"DELETE: retried", http.MethodDelete, nil, 3},
	}
	for _, tc := range cases { // in turn: each counts the upstream's requests
		t.Run(tc.name, func(t *testing.T) {
			before := up.count.Load()
			body := ""
			if tc.method == http.MethodPost {
				body = `{"purpose":"batch"}`
			}
			resp, got := pass(t, g, tc.method, "raw/batches", body, tc.header)
			require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
			require.Equal(t, `{"error":{"message":"overloaded"}}`, got, "the upstream's answer is relayed")
			require.Equal(t, tc.attempts, up.count.Load()-before)
			if tc.method == http.MethodPost {
				_, sent := up.last()
				require.Equal(t, body, sent, "the body byte for byte, on every attempt")
			}
		})
	}
}

func TestPassthroughOneAttemptWithoutAnAnswerAndTheBreaker(t *testing.T) {
	t.Parallel()
	up := newRawUpstream(t, func(w http.ResponseWriter, _ *http.Request) {
		hj, _ := w.(http.Hijacker)
		conn, _, _ := hj.Hijack()
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		conn.Close() // no answer at all
	})
	g := startPassthrough(t, up, "", "      circuit_breaker:\n        failure_threshold: 2\n        timeout: 1m\n")
	for i := range 2 {
		resp, body := pass(t, g, http.MethodPost, "raw/uploads", "x", nil)
		require.Equal(t, http.StatusBadGateway, resp.StatusCode, body)
		require.Equal(t, int32(i+1), up.count.Load(), "a reset POST is not sent again")
	}
	resp, body := pass(t, g, http.MethodGet, "raw/uploads", "", nil)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, body)
	require.Contains(t, body, "circuit_breaker_open", "the two one-shot failures opened the provider's breaker")
	require.Equal(t, int32(2), up.count.Load(), "an open breaker sends nothing")
}

func TestPassthroughStreamsChunkByChunk(t *testing.T) {
	t.Parallel()
	next := make(chan struct{})
	up := newRawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-next: // the client has seen the first chunk
		case <-time.After(10 * time.Second):
			return
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, "data: two\n\n")
	})
	g := startPassthrough(t, up, "", "")
	req, err := http.NewRequest(http.MethodPost, strings.TrimSuffix(g.base, "/v1")+"/p/raw/responses", strings.NewReader(`{"stream":true}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer sk-master")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	rd := bufio.NewReader(resp.Body)
	line, err := rd.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "data: one\n", line, "the first chunk arrives before the upstream sends the second")
	close(next)
	rest, err := io.ReadAll(rd)
	require.NoError(t, err)
	require.Equal(t, "\ndata: two\n\n", string(rest))
}

func TestPassthroughRefusals(t *testing.T) {
	t.Parallel()
	up := newRawUpstream(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	g := startPassthrough(t, up, "  max_body_bytes: 64\n", "  sim:\n    type: simulator\n")
	cases := []struct {
		name, path, key, body, code string
		status                      int
	}{
		{"unknown provider", "nope/files", "sk-master", "", "provider_not_found", 404},
		{"no key", "raw/files", "", "", "invalid_api_key", 401},
		{"wrong key", "raw/files", "sk-wrong", "", "invalid_api_key", 401},
		{"a provider without passthrough", "sim/files", "sk-master", "", "unsupported_endpoint", 400},
		{"body over the limit", "raw/files", "sk-master", strings.Repeat("x", 65), "request_too_large", 413},
		{"a .. segment", "raw/../../admin", "sk-master", "", "invalid_path", 400},
		{"an escaped .. segment", "raw/files/%2e%2e/%2E%2E/admin", "sk-master", "", "invalid_path", 400},
		{"a . segment", "raw/./files", "sk-master", "", "invalid_path", 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, strings.TrimSuffix(g.base, "/v1")+"/p/"+tc.path, strings.NewReader(tc.body))
			require.NoError(t, err)
			if tc.key != "" {
				req.Header.Set("Authorization", "Bearer "+tc.key)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			require.Equal(t, tc.status, resp.StatusCode, string(b))
			require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			require.Contains(t, string(b), `"code":"`+tc.code+`"`)
		})
	}
	require.Zero(t, up.count.Load(), "nothing reached the upstream")
}

// A passthrough call is a call on the provider's account like any other: the
// account's limits (providers.X.limits) count it and refuse it at the limit,
// with the wait, before any upstream call.
func TestPassthroughCountsAgainstTheAccountLimits(t *testing.T) {
	t.Parallel()
	up := newRawUpstream(t, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"object":"list","data":[]}`)
	})
	g := startPassthrough(t, up, "", "    limits: {rpm: 2}\n")
	for i := range 2 {
		resp, body := pass(t, g, http.MethodGet, "raw/batches", "", nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, "call %d: %s", i+1, body)
	}
	resp, body := pass(t, g, http.MethodGet, "raw/batches", "", nil)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, body)
	require.Contains(t, body, `"code":"rate_limit_exceeded"`)
	require.NotEmpty(t, resp.Header.Get("Retry-After"))
	require.Equal(t, int32(2), up.count.Load(), "the refused call reached no upstream")
}

// The account's max_concurrency holds a passthrough call while its answer is
// relayed, not only until the answer's headers: a long download or event
// stream is a call in flight on the account until its last byte.
func TestPassthroughHoldsItsConcurrencyUntilTheAnswerEnds(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	up := newRawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		if strings.HasSuffix(r.URL.Path, "/slow") {
			<-release
		}
		_, _ = io.WriteString(w, "data: last\n\n")
	})
	var unblock sync.Once
	t.Cleanup(func() { unblock.Do(func() { close(release) }) }) // before the upstream's Close, which waits
	g := startPassthrough(t, up, "", "    limits: {max_concurrency: 1}\n")

	req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(g.base, "/v1")+"/p/raw/slow", http.NoBody)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer sk-master")
	slow, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer slow.Body.Close()
	require.Equal(t, http.StatusOK, slow.StatusCode)
	first := make([]byte, len("data: first\n\n"))
	_, err = io.ReadFull(slow.Body, first)
	require.NoError(t, err, "the answer began")

	resp, body := pass(t, g, http.MethodGet, "raw/fast", "", nil)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "a call while the first is relayed: %s", body)
	require.Contains(t, body, `"code":"rate_limit_exceeded"`)
	require.Equal(t, int32(1), up.count.Load(), "the refused call reached no upstream")

	unblock.Do(func() { close(release) })
	rest, err := io.ReadAll(slow.Body)
	require.NoError(t, err)
	require.Equal(t, "data: last\n\n", string(rest))
	resp, body = pass(t, g, http.MethodGet, "raw/fast", "", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "the slot came back when the answer ended: %s", body)
}
