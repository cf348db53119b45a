package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/fakeupstream"
)

// An upstream answer whose status is neither a success nor an error is the
// provider's fault, a 502 naming it: a redirect is never followed (the body and
// the provider's key headers would go to the Location: x-api-key and api-key
// to any host, Authorization to any port of the same one), a 101 never leaves
// the client waiting on a protocol switch, a 304 or a 999 never reaches the
// client as its status.
func TestAnUpstreamStatusThatIsNeitherAnswerNorErrorIs502(t *testing.T) {
	t.Parallel()
	var elsewhere atomic.Int32
	thief := newRawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[]}`))
	})
	var answer atomic.Int32
	up := newRawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		switch st := int(answer.Load()); st {
		case http.StatusSwitchingProtocols:
			conn, rw, err := w.(http.Hijacker).Hijack()
			if err != nil {
				return
			}
			_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
			_ = rw.Flush()
			_, _ = bufio.NewReader(conn).ReadByte() // held open until Switchyard closes it
			conn.Close()
		default:
			w.Header().Set("Location", thief.URL+"/stolen"+r.URL.Path)
			w.WriteHeader(st)
		}
	})
	g := start(t, "", withYAML(
		"  redir:\n    type: openai\n    base_url: "+up.URL+"/v1\n    api_key: sk-redir-key\n    models: [gpt-4o]\n"+
			"  anth:\n    type: anthropic\n    base_url: "+up.URL+"\n    api_key: sk-ant-redir-key\n    models: [claude-x]\n"+
			"  az:\n    type: azure\n    base_url: "+up.URL+"\n    api_key: azure-redir-key\n    deployments: {gpt-4o: dep}\n"+noRetries))
	calls := []struct {
		name, provider, path, body string
	}{
		{"chat", "redir", "/chat/completions", `{"model":"redir/gpt-4o","messages":[{"role":"user","content":"hi"}]}`},
		{"chat stream", "redir", "/chat/completions", `{"model":"redir/gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{"embeddings", "redir", "/embeddings", `{"model":"redir/gpt-4o","input":"hi"}`},
		{"anthropic chat", "anth", "/chat/completions", `{"model":"anth/claude-x","messages":[{"role":"user","content":"hi"}]}`},
		{"anthropic messages", "anth", "/messages", `{"model":"anth/claude-x","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`},
		{"anthropic messages stream", "anth", "/messages", `{"model":"anth/claude-x","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{"azure chat", "az", "/chat/completions", `{"model":"az/gpt-4o","messages":[{"role":"user","content":"hi"}]}`},
	}
	for _, st := range []int{http.StatusSwitchingProtocols, http.StatusMovedPermanently, http.StatusFound,
		http.StatusNotModified, http.StatusTemporaryRedirect, http.StatusPermanentRedirect, 600, 999} {
		for _, c := range calls {
			t.Run(fmt.Sprint(st)+" "+c.name, func(t *testing.T) {
				answer.Store(int32(st))
				resp := post(t, g.base+c.path, c.body)
				require.Equal(t, http.StatusBadGateway, resp.StatusCode, "upstream %d", st)
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				require.NoError(t, err)
				body := string(b)
				require.Contains(t, body, fmt.Sprintf("provider %s answered %d", c.provider, st))
				require.Contains(t, body, "neither an answer nor an error")
				require.NotContains(t, body, "redir-key")
			})
		}
	}
	answer.Store(http.StatusTemporaryRedirect)
	req := grpcReq()
	req.Model = "redir/gpt-4o"
	_, err := pb.NewChatServiceClient(g.conn).CreateChatCompletion(context.Background(), req)
	require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	require.Zero(t, elsewhere.Load(), "nothing went to the redirect's Location")
	require.True(t, strings.Contains(g.logs.String(), "check its base_url"), "the operator is told")
}

// TestAnErrorTextThatIsNotUTF8KeepsItsDetails: an upstream's error whose text is
// not UTF-8 (a Latin-1 page) reaches a gRPC client with its ErrorInfo and its
// Retry-After as RetryInfo, the text mended; grpc-go dropped every detail of a
// status whose text was not UTF-8.
func TestAnErrorTextThatIsNotUTF8KeepsItsDetails(t *testing.T) {
	t.Parallel()
	g := start(t, "", withYAML("resilience:\n  retry:\n    max_retries: 0\n"))
	g.up.SetDefault(fakeupstream.Reply{Status: http.StatusTooManyRequests, Body: "Trop de requ\xeates, r\xe9essayez",
		Header: map[string]string{"Content-Type": "text/plain; charset=iso-8859-1", "Retry-After": "120"}})
	_, err := pb.NewChatServiceClient(g.conn).CreateChatCompletion(context.Background(), grpcReq())
	st := status.Convert(err)
	require.Equal(t, codes.ResourceExhausted, st.Code())
	require.Contains(t, st.Message(), "Trop de requ\uFFFDtes")
	var info *errdetails.ErrorInfo
	var retry *errdetails.RetryInfo
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			info = d
		case *errdetails.RetryInfo:
			retry = d
		}
	}
	require.NotNil(t, info, "the ErrorInfo is there")
	require.Equal(t, "429", info.GetMetadata()["http_status"])
	require.NotNil(t, retry, "the RetryInfo is there")
	require.Equal(t, 120*time.Second, retry.GetRetryDelay().AsDuration())
}
