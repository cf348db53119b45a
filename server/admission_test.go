package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
)

// TestUnauthenticatedBodyIsRefusedBeforeItIsRead: a caller without a key gets 401
// while its 8 MB body of deep nesting is still being sent: the response arrives
// although the body never finishes, so the gateway cannot have read or decoded it.
func TestUnauthenticatedBodyIsRefusedBeforeItIsRead(t *testing.T) {
	t.Parallel()
	r := serve(t, nil)
	for _, tc := range []struct{ name, method, path, prefix string }{
		{"chat", http.MethodPost, "/v1/chat/completions", `{"model":"x","messages":[],"x":`},
		{"admin upsert", http.MethodPut, "/admin/v1/virtual_models", `{"virtual_model":{"x":`},
		{"admin breaker reset", http.MethodPost, "/admin/v1/breakers:reset", `{"x":`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body, send := io.Pipe()
			go func() {
				// The first megabyte of the nesting, then nothing: the body never ends.
				_, _ = io.WriteString(send, tc.prefix+strings.Repeat("[", 1<<20))
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			// The transport waits for the body's reader before it reports a failure.
			context.AfterFunc(ctx, func() { send.CloseWithError(io.ErrUnexpectedEOF) })
			req, err := http.NewRequestWithContext(ctx, tc.method, "http://"+r.http+tc.path, body)
			require.NoError(t, err)
			req.ContentLength = 8 << 20
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultTransport.RoundTrip(req)
			require.NoError(t, err, "the refusal must arrive while the body is still being sent")
			defer resp.Body.Close()
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
			require.NotEmpty(t, resp.Header.Get("X-Request-Id"), "the refusal passed the interceptor chain")
			var e struct{ Error struct{ Code, Type string } }
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
			require.Equal(t, "invalid_api_key", e.Error.Code)
		})
	}
}

// TestBearerSchemeIsCaseInsensitive: the auth scheme matches in any case (RFC 7235)
// on both surfaces: REST chat (checked before the body), REST through grpc-gateway,
// and gRPC.
func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	t.Parallel()
	r := serve(t, nil)
	models := pb.NewModelServiceClient(r.dialGRPC(t))
	for _, tc := range []struct {
		header string
		ok     bool
	}{
		{"Bearer sk-master", true},
		{"bearer sk-master", true},
		{"BEARER sk-master", true},
		{"bEaReR  sk-master", true},
		{"Basic sk-master", false},
		{"Bearersk-master", false},
		{"sk-master", false},
		{"bearer sk-other", false},
	} {
		t.Run(tc.header, func(t *testing.T) {
			t.Parallel()
			// A body without a model: an accepted key gets 400, a refused one 401.
			req, err := http.NewRequest(http.MethodPost, "http://"+r.http+"/v1/chat/completions", strings.NewReader(`{}`))
			require.NoError(t, err)
			req.Header.Set("Authorization", tc.header)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, map[bool]int{true: 400, false: 401}[tc.ok], resp.StatusCode, "REST chat")

			req, err = http.NewRequest(http.MethodGet, "http://"+r.http+"/v1/models", nil)
			require.NoError(t, err)
			req.Header.Set("Authorization", tc.header)
			resp, err = http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, map[bool]int{true: 200, false: 401}[tc.ok], resp.StatusCode, "REST models")

			ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", tc.header)
			_, err = models.ListModels(ctx, &pb.ListModelsRequest{})
			require.Equal(t, map[bool]codes.Code{true: codes.OK, false: codes.Unauthenticated}[tc.ok], status.Code(err), "gRPC")
		})
	}
}

// rawRequest opens a connection and writes head (request line and headers) and
// then body, returning the connection.
func rawRequest(t *testing.T, addr, head, body string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	_, err = io.WriteString(conn, head+body)
	require.NoError(t, err)
	return conn
}

// TestReadTimeoutBoundsTheWholeRequest: a request whose body (or headers) stop
// arriving gets 408, or its connection closed, within read_timeout, key or not.
func TestReadTimeoutBoundsTheWholeRequest(t *testing.T) {
	t.Parallel()
	const timeout = 200 * time.Millisecond
	r := serve(t, func(c *Config) { c.ReadTimeout = timeout })
	chat := "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n"
	for _, tc := range []struct {
		name, head, body string
		status           string // "" = closed without an answer
	}{
		{"partial body", chat + "Authorization: Bearer sk-master\r\n\r\n", "{", "408"},
		{"partial body without a key", chat + "\r\n", "{", "401"},
		{"partial headers", "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			conn := rawRequest(t, r.http, tc.head, tc.body)
			start := time.Now()
			require.NoError(t, conn.SetReadDeadline(start.Add(5*time.Second)))
			got, err := io.ReadAll(conn) // to the server's close
			require.NoError(t, err, "the server must close the connection itself")
			require.Less(t, time.Since(start), 2*time.Second)
			if tc.status == "" {
				require.Empty(t, got)
				return
			}
			resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(got))), nil)
			require.NoError(t, err)
			require.Equal(t, tc.status, fmt.Sprint(resp.StatusCode))
		})
	}
}

// TestAnswersOutliveTheReadTimeout: read_timeout ends once the body is read; a
// stream and a unary answer that take longer than it arrive whole.
func TestAnswersOutliveTheReadTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 100 * time.Millisecond
	r := serve(t, func(c *Config) { c.ReadTimeout = timeout })

	stream := post(t, r.http, chatJSON+`,"stream":true}`)
	require.Equal(t, http.StatusOK, stream.StatusCode)
	require.Equal(t, "stream", <-r.p.started)
	events := bufio.NewReader(stream.Body)
	require.Contains(t, nextEvent(t, events), "word")
	time.Sleep(4 * timeout) // the read deadline, had it stayed, would have passed
	r.p.tick <- struct{}{}
	require.Contains(t, nextEvent(t, events), "word", "the stream goes on past read_timeout")

	unary := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, "http://"+r.http+"/v1/chat/completions", strings.NewReader(chatJSON+`}`))
		req.Header.Set("Authorization", "Bearer sk-master")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			unary <- 0
			return
		}
		resp.Body.Close()
		unary <- resp.StatusCode
	}()
	require.Equal(t, "chat", <-r.p.started)
	time.Sleep(4 * timeout)
	r.p.letGo()
	require.Equal(t, "[DONE]", nextEvent(t, events))
	require.Equal(t, http.StatusOK, <-unary, "a unary answer slower than read_timeout")
}

// post sends a chat request with the master key.
func post(t *testing.T, addr, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/chat/completions", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer sk-master")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// nextEvent reads one SSE event's data.
func nextEvent(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	for {
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		if data, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "data: "); ok {
			return data
		}
	}
}

// TestIdleKeepAliveConnectionsAreClosed: a REST keep-alive connection that carries
// no request for idle_timeout is closed by the server.
func TestIdleKeepAliveConnectionsAreClosed(t *testing.T) {
	t.Parallel()
	r := serve(t, func(c *Config) { c.IdleTimeout = 200 * time.Millisecond })
	conn := rawRequest(t, r.http, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n", "")
	start := time.Now()
	require.NoError(t, conn.SetReadDeadline(start.Add(5*time.Second)))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	_, err = io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	_, err = br.ReadByte()
	require.ErrorIs(t, err, io.EOF, "the idle connection is closed by the server")
	require.Less(t, time.Since(start), 2*time.Second)
}
