package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	adminpb "github.com/switchyard/switchyard/gen/switchyard/admin/v1"
	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/fakeupstream"
	providersopenai "github.com/switchyard/switchyard/providers/openai"
)

// Upstreams Switchyard cannot trust, seen from the client: whatever an upstream
// sends is reported as the upstream's fault (502 naming the provider), never
// as the client's, never with Switchyard's secrets in it, and never takes the
// process down or holds the client past a documented bound.

// upstreamKey is the api_key the harness gives provider "up".
const upstreamKey = "sk-upstream"

const noRetries = "resilience:\n  retry:\n    max_retries: 0\n  circuit_breaker:\n    enabled: false\n"

// hostileCompletion is a chat.completion whose unknown member "x" is nested
// depth arrays deep.
func hostileCompletion(depth int) string {
	return `{"id":"x","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":` +
		`{"role":"assistant","content":"a"},"finish_reason":"stop"}],"x":` +
		strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`
}

func hostileChunk(depth int) string {
	return `{"id":"x","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"b"}}],"x":` +
		strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`
}

const okChunk = `{"id":"x","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"a"}}]}`

// hostileChain runs Switchyard with "up" (the hostile target) and a healthy
// "backup" behind the virtual model "resilient-chat".
func hostileChain(t *testing.T, serverYAML string, opts ...yamlOption) (*gateway, *fakeupstream.Server) {
	t.Helper()
	backup := fakeupstream.New("gpt-4o-mini")
	t.Cleanup(backup.Close)
	backup.SetDefault(fakeupstream.Reply{Text: "Hello from the backup!"})
	g := start(t, serverYAML, append(opts, withYAML("  backup:\n    type: openai\n    base_url: "+backup.URL+"\n"+
		"resilience:\n  retry:\n    max_retries: 1\n    initial_backoff: 1ms\n"+
		"virtual_models:\n  - source: resilient-chat\n    strategy: failover\n    targets:\n"+
		"      - model: up/gpt-4o\n      - model: backup/gpt-4o-mini\n"))...)
	return g, backup
}

// upFailures is the consecutive failures up's breaker has counted.
func upFailures(t *testing.T, g *gateway) int32 {
	t.Helper()
	resp, err := adminpb.NewAdminServiceClient(g.conn).ListBreakers(context.Background(), &adminpb.ListBreakersRequest{})
	require.NoError(t, err)
	for _, b := range resp.GetBreakers() {
		if b.GetProvider() == "up" {
			return b.GetConsecutiveFailures()
		}
	}
	t.Fatal("no breaker for up")
	return 0
}

// requireBadGatewayNaming checks a REST answer: 502 server_error naming provider up.
func requireBadGatewayNaming(t *testing.T, resp *http.Response, status int) errorBody {
	t.Helper()
	require.Equal(t, status, resp.StatusCode)
	e := readError(t, resp)
	require.Equal(t, "server_error", e.Error.Type)
	require.Contains(t, e.Error.Message, "provider up ")
	require.NotContains(t, e.Error.Message, "request body", "the client's request was fine")
	return e
}

// requireGRPCNaming checks a gRPC error: code, and a message naming provider up.
func requireGRPCNaming(t *testing.T, err error, code codes.Code) {
	t.Helper()
	require.Equal(t, code, status.Code(err), "%v", err)
	require.Contains(t, status.Convert(err).Message(), "provider up ")
	require.NotContains(t, status.Convert(err).Message(), "request body")
}

func TestUnreadableUpstreamAnswerIs502NamingTheProvider(t *testing.T) {
	t.Parallel()
	g := start(t, "", withYAML(noRetries))
	cases := []struct {
		name string
		body string
	}{
		{"not JSON", "<html>Service Unavailable</html>"},
		{"8 MB with a 4M-deep unknown member", hostileCompletion(4_000_000)},
		{"larger than the read limit", `{"x":"` + strings.Repeat("a", providersopenai.MaxResponseBytes) + `"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g.up.Script(fakeupstream.Reply{Body: tc.body})
			requireBadGatewayNaming(t, post(t, g.base+"/chat/completions", chatBody+`}`), http.StatusBadGateway)

			g.up.Script(fakeupstream.Reply{Body: tc.body})
			_, err := sdk(g, "k").Chat.Completions.New(context.Background(), userMsg("hi"))
			var apiErr *openai.Error
			require.True(t, errors.As(err, &apiErr), "%v", err)
			require.Equal(t, http.StatusBadGateway, apiErr.StatusCode)
			require.Equal(t, "server_error", apiErr.Type)

			g.up.Script(fakeupstream.Reply{Body: tc.body})
			_, err = pb.NewChatServiceClient(g.conn).CreateChatCompletion(context.Background(), grpcReq())
			requireGRPCNaming(t, err, codes.Unavailable)
		})
	}
	// Still serving.
	_, err := pb.NewChatServiceClient(g.conn).CreateChatCompletion(context.Background(), grpcReq())
	require.NoError(t, err)
}

func TestUnreadableStreamFromUpstream(t *testing.T) {
	t.Parallel()
	g := start(t, "", withYAML(noRetries))
	stream := chatBody + `,"stream":true}`
	t.Run("first event: a failed attempt, 502", func(t *testing.T) {
		for _, ev := range []string{"<html>", hostileChunk(4_000_000)} {
			g.up.Script(fakeupstream.Reply{Events: []string{ev, "[DONE]"}})
			requireBadGatewayNaming(t, post(t, g.base+"/chat/completions", stream), http.StatusBadGateway)
			g.up.Script(fakeupstream.Reply{Events: []string{ev, "[DONE]"}})
			st, err := pb.NewChatServiceClient(g.conn).StreamChatCompletion(context.Background(), grpcReq())
			require.NoError(t, err)
			_, err = st.Recv()
			requireGRPCNaming(t, err, codes.Unavailable)
		}
	})
	t.Run("later chunk: the in-band error, never the chunk", func(t *testing.T) {
		for _, ev := range []string{"{oops", hostileChunk(4_000_000)} {
			events := []string{okChunk, ev, `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, "[DONE]"}
			g.up.Script(fakeupstream.Reply{Events: events})
			got := sseEvents(t, post(t, g.base+"/chat/completions", stream))
			require.Len(t, got, 2, "the good chunk, then the error")
			require.Contains(t, got[1], `"code":"stream_incomplete"`)
			require.Contains(t, got[1], "provider up ")
			require.NotContains(t, got[1], "request body")

			g.up.Script(fakeupstream.Reply{Events: events})
			st, err := pb.NewChatServiceClient(g.conn).StreamChatCompletion(context.Background(), grpcReq())
			require.NoError(t, err)
			var texts []string
			for {
				c, err := st.Recv()
				if err != nil {
					require.NotEqual(t, io.EOF, err)
					requireGRPCNaming(t, err, codes.Unavailable)
					require.Equal(t, "stream_incomplete", reasonOf(err))
					break
				}
				texts = append(texts, c.GetChoices()[0].GetDelta().GetContent())
			}
			require.Equal(t, []string{"a"}, texts, "no half-decoded chunk")
		}
	})
	_, err := pb.NewChatServiceClient(g.conn).CreateChatCompletion(context.Background(), grpcReq())
	require.NoError(t, err, "still serving")
}

func TestHostileUpstreamFailsOver(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		yaml     string
		reply    fakeupstream.Reply
		stream   bool
		failures int32 // up's breaker failures per request
	}{
		{"unreadable 200", "", fakeupstream.Reply{Body: "not json"}, false, 1},
		{"4M-deep 200", "", fakeupstream.Reply{Body: hostileCompletion(4_000_000)}, false, 1},
		{"4M-deep first stream event", "", fakeupstream.Reply{Events: []string{hostileChunk(4_000_000)}}, true, 1},
		{"stream headers then nothing", "    resilience:\n      first_token_timeout: 300ms\n", fakeupstream.Reply{HeadersOnly: true}, true, 1},
		// A refused key is not retried, but it is a breaker failure (the target is out
		// of service until an operator fixes the key), whatever failure_on_statuses says.
		{"upstream 401", "", fakeupstream.Reply{Status: 401}, false, 1},
		{"upstream 403 on a stream", "", fakeupstream.Reply{Status: 403}, true, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, backup := hostileChain(t, "", withProviderYAML(tc.yaml))
			g.up.SetDefault(tc.reply)
			body := strings.Replace(chatBody, "up/gpt-4o", "resilient-chat", 1)
			if tc.stream {
				body += `,"stream":true`
			}
			t0 := time.Now()
			resp := post(t, g.base+"/chat/completions", body+`}`)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Equal(t, "backup/gpt-4o-mini", resp.Header.Get("X-Switchyard-Target"))
			if tc.stream {
				require.Contains(t, strings.Join(sseEvents(t, resp), ""), "backup!")
			}
			require.Less(t, time.Since(t0), 10*time.Second)
			require.Equal(t, tc.failures, upFailures(t, g), "up's breaker")

			req := grpcReq()
			req.Model = "resilient-chat"
			var hdr metadata.MD
			if tc.stream {
				st, err := pb.NewChatServiceClient(g.conn).StreamChatCompletion(context.Background(), req, grpc.Header(&hdr))
				require.NoError(t, err)
				text, _ := readGRPCStream(t, st)
				require.Equal(t, "Hello from the backup!", text)
			} else {
				resp, err := pb.NewChatServiceClient(g.conn).CreateChatCompletion(context.Background(), req, grpc.Header(&hdr))
				require.NoError(t, err)
				require.Equal(t, "Hello from the backup!", resp.GetChoices()[0].GetMessage().GetContent().GetStringValue())
			}
			require.Equal(t, []string{"backup/gpt-4o-mini"}, hdr.Get("x-switchyard-target"))
			require.Equal(t, 2*tc.failures, upFailures(t, g), "up's breaker")
			require.Equal(t, 2, backup.Count())
		})
	}
}

func TestStreamFirstTokenTimeoutWithoutBackup(t *testing.T) {
	t.Parallel()
	g := start(t, "", withYAML(noRetries+"  first_token_timeout: 300ms\n"))
	g.up.SetDefault(fakeupstream.Reply{HeadersOnly: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t0 := time.Now()
	resp := post(t, g.base+"/chat/completions", chatBody+`,"stream":true}`)
	e := requireBadGatewayNaming(t, resp, http.StatusGatewayTimeout)
	require.Contains(t, e.Error.Message, "sent no content within 300ms")
	require.Less(t, time.Since(t0), 10*time.Second, "bounded by the first-token timeout, not the client's deadline")

	t0 = time.Now()
	st, err := pb.NewChatServiceClient(g.conn).StreamChatCompletion(ctx, grpcReq())
	require.NoError(t, err)
	_, err = st.Recv()
	requireGRPCNaming(t, err, codes.DeadlineExceeded)
	require.Less(t, time.Since(t0), 10*time.Second)

	// The provider's own setting overrides the global one.
	g2 := start(t, "", withProviderYAML("    resilience:\n      first_token_timeout: 200ms\n"),
		withYAML(noRetries+"  first_token_timeout: 1h\n"))
	g2.up.SetDefault(fakeupstream.Reply{HeadersOnly: true})
	e = requireBadGatewayNaming(t, post(t, g2.base+"/chat/completions", chatBody+`,"stream":true}`), http.StatusGatewayTimeout)
	require.Contains(t, e.Error.Message, "within 200ms")
}

func TestUpstreamAuthFailureIsNotTheClients(t *testing.T) {
	t.Parallel()
	// Each refusal is a breaker failure: a high threshold keeps up's breaker closed
	// for the eight calls (TestHostileUpstreamFailsOver counts the failures).
	g := start(t, "", withProviderYAML("    resilience:\n      circuit_breaker:\n        failure_threshold: 100\n"))
	body := `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`
	for _, st := range []int{http.StatusUnauthorized, http.StatusForbidden} {
		t.Run(fmt.Sprint(st), func(t *testing.T) {
			g.up.Script(fakeupstream.Reply{Status: st, Body: body})
			e := requireBadGatewayNaming(t, post(t, g.base+"/chat/completions", chatBody+`}`), http.StatusBadGateway)
			require.Contains(t, e.Error.Message, "refused Switchyard's credentials")
			require.Equal(t, "upstream_authentication_failed", *e.Error.Code)

			g.up.Script(fakeupstream.Reply{Status: st, Body: body})
			_, err := sdk(g, "k").Chat.Completions.New(context.Background(), userMsg("hi"))
			var apiErr *openai.Error
			require.True(t, errors.As(err, &apiErr), "%v", err)
			require.Equal(t, http.StatusBadGateway, apiErr.StatusCode, "the SDK must not report its own key as invalid")
			require.NotEqual(t, "invalid_api_key", apiErr.Code)

			g.up.Script(fakeupstream.Reply{Status: st, Body: body})
			_, err = pb.NewChatServiceClient(g.conn).CreateChatCompletion(context.Background(), grpcReq())
			requireGRPCNaming(t, err, codes.Unavailable)
			require.NotEqual(t, codes.Unauthenticated, status.Code(err))
			require.NotEqual(t, codes.PermissionDenied, status.Code(err))

			g.up.Script(fakeupstream.Reply{Status: st, Body: body})
			s, err := pb.NewChatServiceClient(g.conn).StreamChatCompletion(context.Background(), grpcReq())
			require.NoError(t, err)
			_, err = s.Recv()
			requireGRPCNaming(t, err, codes.Unavailable)
		})
	}
	require.Equal(t, 8, g.up.Count(), "a refused key is not retried")
	require.Contains(t, g.logs.String(), `"level":"ERROR","msg":"the provider refused Switchyard's credentials`)
}

// grpcStrings is every string a gRPC client can see of an error: the message,
// every detail's text, and the header and trailer metadata.
func grpcStrings(err error, md ...metadata.MD) []string {
	st := status.Convert(err)
	out := []string{st.Message()}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			out = append(out, info.GetReason(), info.GetDomain())
			for k, v := range info.GetMetadata() {
				out = append(out, k, v)
			}
			continue
		}
		out = append(out, fmt.Sprint(d))
	}
	for _, m := range md {
		for k, vs := range m {
			out = append(out, k)
			out = append(out, vs...)
		}
	}
	return out
}

func TestUpstreamKeyNeverReachesTheClient(t *testing.T) {
	t.Parallel()
	g := start(t, "", withYAML(noRetries))
	bodies := map[string]string{
		"message": `{"error":{"message":"bad key ` + upstreamKey + `","type":"t","param":"p","code":"c"}}`,
		"type":    `{"error":{"message":"bad key","type":"key=` + upstreamKey + `","param":"p","code":"c"}}`,
		"code":    `{"error":{"message":"bad key","type":"t","param":"p","code":"` + upstreamKey + `"}}`,
		"param":   `{"error":{"message":"bad key","type":"t","param":"` + upstreamKey + `","code":"c"}}`,
		"issue":   `{"error":{"message":"bad key","type":"key=` + upstreamKey + `","code":"` + upstreamKey + `"}}`,
		"bare":    `{"error":"bad key ` + upstreamKey + `"}`,
		"text":    `bad key ` + upstreamKey,
	}
	for field, body := range bodies {
		for _, st := range []int{400, 401, 429, 500} {
			t.Run(fmt.Sprintf("%s/%d", field, st), func(t *testing.T) {
				g.up.Script(fakeupstream.Reply{Status: st, Body: body})
				resp := post(t, g.base+"/chat/completions", chatBody+`}`)
				raw, _ := io.ReadAll(resp.Body)
				require.NotEqual(t, 200, resp.StatusCode)
				require.NotContains(t, string(raw), upstreamKey, "REST body")
				for k, vs := range resp.Header {
					require.NotContains(t, k+strings.Join(vs, ","), upstreamKey, "REST header %s", k)
				}

				g.up.Script(fakeupstream.Reply{Status: st, Body: body})
				var hdr, trl metadata.MD
				_, err := pb.NewChatServiceClient(g.conn).CreateChatCompletion(context.Background(), grpcReq(),
					grpc.Header(&hdr), grpc.Trailer(&trl))
				require.Error(t, err)
				for _, s := range grpcStrings(err, hdr, trl) {
					require.NotContains(t, s, upstreamKey, "gRPC")
				}

				// The same hidden in a 200 and as a stream's first event.
				if strings.HasPrefix(body, `{"error"`) {
					g.up.Script(fakeupstream.Reply{Body: body})
					raw, _ := io.ReadAll(post(t, g.base+"/chat/completions", chatBody+`}`).Body)
					require.NotContains(t, string(raw), upstreamKey, "hidden error")
					g.up.Script(fakeupstream.Reply{Events: []string{body}})
					s, err := pb.NewChatServiceClient(g.conn).StreamChatCompletion(context.Background(), grpcReq())
					require.NoError(t, err)
					_, err = s.Recv()
					require.Error(t, err)
					for _, s := range grpcStrings(err) {
						require.NotContains(t, s, upstreamKey, "gRPC stream")
					}
				}
			})
		}
	}
	t.Run("mid-stream error event", func(t *testing.T) {
		ev := []string{okChunk, `{"error":{"message":"bad key ` + upstreamKey + `","type":"` + upstreamKey + `","code":"` + upstreamKey + `"}}`}
		g.up.Script(fakeupstream.Reply{Events: ev})
		raw, _ := io.ReadAll(post(t, g.base+"/chat/completions", chatBody+`,"stream":true}`).Body)
		require.Contains(t, string(raw), "stream_incomplete")
		require.NotContains(t, string(raw), upstreamKey)
		g.up.Script(fakeupstream.Reply{Events: ev})
		s, err := pb.NewChatServiceClient(g.conn).StreamChatCompletion(context.Background(), grpcReq())
		require.NoError(t, err)
		_, err = s.Recv()
		require.NoError(t, err)
		_, err = s.Recv()
		require.Error(t, err)
		for _, s := range grpcStrings(err, s.Trailer()) {
			require.NotContains(t, s, upstreamKey)
		}
	})
}

func TestBaseURLUserinfoIsNeverShown(t *testing.T) {
	t.Parallel()
	other := fakeupstream.New()
	t.Cleanup(other.Close)
	const password = "pw-in-the-url-42"
	base := strings.Replace(other.URL, "http://", "http://alice:"+password+"@", 1)
	g := start(t, "", withYAML("  withauth:\n    type: openai\n    base_url: "+base+"\n"))
	resp, err := adminpb.NewAdminServiceClient(g.conn).ListProviders(context.Background(), &adminpb.ListProvidersRequest{})
	require.NoError(t, err)
	found := false
	for _, p := range resp.GetProviders() {
		if p.GetName() == "withauth" {
			found = true
			require.Equal(t, other.URL, p.GetBaseUrl())
		}
	}
	require.True(t, found)
	code, body := get(t, "http://"+g.app.HTTPAddr()+"/admin/v1/providers")
	require.Equal(t, 200, code)
	require.Contains(t, body, other.URL)
	require.NotContains(t, body, password)
	require.NotContains(t, body, "alice")
	require.Contains(t, g.logs.String(), other.URL, "the base URL is logged")
	require.NotContains(t, g.logs.String(), password)
	require.NotContains(t, g.logs.String(), "alice@")
}
