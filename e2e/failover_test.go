package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/fakeupstream"
)

// startChain runs Switchyard with providers "up" and "backup" and a virtual model
// "resilient-chat" → up/gpt-4o, backup/gpt-4o-mini.
func startChain(t *testing.T, extra string) (*gateway, *fakeupstream.Server) {
	t.Helper()
	backup := fakeupstream.New("gpt-4o-mini")
	t.Cleanup(backup.Close)
	backup.SetDefault(fakeupstream.Reply{Text: "Hello from the backup!"})
	g := start(t, "", withYAML("  backup:\n    type: openai\n    base_url: "+backup.URL+"\n"+
		"resilience:\n  retry:\n    max_retries: 1\n    initial_backoff: 1ms\n"+
		"virtual_models:\n  - source: resilient-chat\n    strategy: failover\n    targets:\n"+
		"      - model: up/gpt-4o\n      - model: backup/gpt-4o-mini\n"+extra))
	return g, backup
}

func TestFailoverWithTheGoSDK(t *testing.T) {
	t.Parallel()
	g, backup := startChain(t, "")
	g.up.SetDefault(fakeupstream.Reply{Status: 503})
	p := userMsg("hi")
	p.Model = "resilient-chat"
	var raw *http.Response
	resp, err := sdk(g, "k").Chat.Completions.New(context.Background(), p,
		option.WithHeader("Idempotency-Key", "idem-7"), option.WithResponseInto(&raw))
	require.NoError(t, err)
	require.Equal(t, "Hello from the backup!", resp.Choices[0].Message.Content)
	require.Equal(t, "gpt-4o-mini", resp.Model, "the model field carries the answering model")
	require.Equal(t, "backup/gpt-4o-mini", raw.Header.Get("X-Switchyard-Target"))
	require.Equal(t, 2, g.up.Count(), "the primary ran its own retry sequence (1 retry) first")
	require.Equal(t, 1, backup.Count())
	require.Equal(t, "idem-7", g.up.Requests()[1].Header.Get("Idempotency-Key"))
	require.Empty(t, backup.Requests()[0].Header.Get("Idempotency-Key"), "a failover attempt goes without the key")
	require.Equal(t, "gpt-4o-mini", backup.Requests()[0].JSON()["model"])

	page, err := sdk(g, "k").Models.List(context.Background())
	require.NoError(t, err)
	found := false
	for _, m := range page.Data {
		found = found || m.ID == "resilient-chat"
	}
	require.True(t, found, "virtual models are listed")
}

func TestFailoverNotOnPlainClientErrors(t *testing.T) {
	t.Parallel()
	g, backup := startChain(t, "")
	g.up.Script(fakeupstream.Reply{Status: 400})
	resp := post(t, g.base+"/chat/completions", strings.Replace(chatBody, "up/gpt-4o", "resilient-chat", 1)+`}`)
	require.Equal(t, 400, resp.StatusCode)
	require.Zero(t, backup.Count())

	g.up.Script(fakeupstream.Reply{Status: 404, Body: `{"error":{"message":"The model 'gpt-4o' does not exist","type":"invalid_request_error","code":"model_not_found"}}`})
	resp = post(t, g.base+"/chat/completions", strings.Replace(chatBody, "up/gpt-4o", "resilient-chat", 1)+`}`)
	require.Equal(t, 200, resp.StatusCode, "model not found fails over")
	require.Equal(t, 1, backup.Count())
}

func TestAllTargetsFailGivesTheLastError(t *testing.T) {
	t.Parallel()
	g, backup := startChain(t, "")
	g.up.SetDefault(fakeupstream.Reply{Status: 500})
	backup.SetDefault(fakeupstream.Reply{Status: 429, Body: `{"error":{"message":"backup is rate limited","type":"rate_limit_error","code":"rate_limit_exceeded"}}`})
	resp := post(t, g.base+"/chat/completions", strings.Replace(chatBody, "up/gpt-4o", "resilient-chat", 1)+`}`)
	require.Equal(t, 429, resp.StatusCode)
	e := readError(t, resp)
	require.Equal(t, "backup is rate limited", e.Error.Message)
	require.Equal(t, "false", resp.Header.Get("X-Should-Retry"), "the failover chain was spent")
	require.Equal(t, 1, g.up.Count(), "500 is not retried")
	require.Equal(t, 2, backup.Count(), "429 is retried once (max_retries 1)")
}

func TestStreamFailoverBeforeFirstByte(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		reply fakeupstream.Reply
		// attempts on up: its retry sequence (max_retries 1) runs before failover,
		// as for a unary call.
		attempts int
	}{
		{"error status", fakeupstream.Reply{Status: 503}, 2},
		// 529 (overloaded) is retried, as 503 is.
		{"in-band error first event", fakeupstream.Reply{Events: []string{`{"error":{"message":"overloaded","code":"529"}}`}}, 2},
		{"200 closing with no event", fakeupstream.Reply{Events: []string{}}, 2},
		{"connection reset", fakeupstream.Reply{Reset: true}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, backup := startChain(t, "")
			g.up.SetDefault(tc.reply)
			resp := post(t, g.base+"/chat/completions", strings.Replace(chatBody, "up/gpt-4o", "resilient-chat", 1)+`,"stream":true}`)
			require.Equal(t, 200, resp.StatusCode)
			require.Equal(t, "backup/gpt-4o-mini", resp.Header.Get("X-Switchyard-Target"))
			events := sseEvents(t, resp)
			require.Equal(t, "[DONE]", events[len(events)-1], "one clean stream")
			require.Contains(t, strings.Join(events, ""), "backup!")
			require.Equal(t, tc.attempts, g.up.Count(), "retried on the same target before the first byte, then failed over")
			require.Equal(t, 1, backup.Count())

			// The same over gRPC.
			var hdr metadata.MD
			req := grpcReq()
			req.Model = "resilient-chat"
			st, err := pb.NewChatServiceClient(g.conn).StreamChatCompletion(context.Background(), req, grpc.Header(&hdr))
			require.NoError(t, err)
			text, _ := readGRPCStream(t, st)
			require.Equal(t, "Hello from the backup!", text)
			require.Equal(t, []string{"backup/gpt-4o-mini"}, hdr.Get("x-switchyard-target"))
		})
	}
}

func TestOpenBreakerTargetIsSkipped(t *testing.T) {
	t.Parallel()
	g, backup := startChain(t, "")
	g.up.SetDefault(fakeupstream.Reply{Status: 503})
	body := strings.Replace(chatBody, "up/gpt-4o", "resilient-chat", 1) + `}`
	for range 5 { // default failure_threshold: 5 exhausted sequences open up's breaker
		resp := post(t, g.base+"/chat/completions", body)
		require.Equal(t, 200, resp.StatusCode)
	}
	require.Equal(t, 10, g.up.Count())
	resp := post(t, g.base+"/chat/completions", body)
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, 10, g.up.Count(), "the open breaker skips up without an upstream call")
	require.Equal(t, 6, backup.Count())
}

func TestGRPCFailoverUnary(t *testing.T) {
	t.Parallel()
	g, backup := startChain(t, "")
	g.up.SetDefault(fakeupstream.Reply{Reset: true})
	req := grpcReq()
	req.Model = "resilient-chat"
	var hdr metadata.MD
	resp, err := pb.NewChatServiceClient(g.conn).CreateChatCompletion(context.Background(), req, grpc.Header(&hdr))
	require.NoError(t, err)
	require.Equal(t, "Hello from the backup!", resp.GetChoices()[0].GetMessage().GetContent().GetStringValue())
	require.Equal(t, []string{"backup/gpt-4o-mini"}, hdr.Get("x-switchyard-target"))
	require.Equal(t, 2, g.up.Count())
	require.Equal(t, 1, backup.Count())

	backup.SetDefault(fakeupstream.Reply{Status: 502})
	_, err = pb.NewChatServiceClient(g.conn).CreateChatCompletion(context.Background(), req)
	require.Equal(t, codes.Unavailable, status.Code(err))
}

func TestSpentChainTellsClientsNotToRetry(t *testing.T) {
	t.Parallel()
	g, backup := startChain(t, "")
	g.up.SetDefault(fakeupstream.Reply{Status: 500})
	backup.SetDefault(fakeupstream.Reply{Status: 500})
	resp := post(t, g.base+"/chat/completions", strings.Replace(chatBody, "up/gpt-4o", "resilient-chat", 1)+`}`)
	require.Equal(t, 500, resp.StatusCode)
	require.Equal(t, "false", resp.Header.Get("X-Should-Retry"), "500s are not retried, but the chain was walked")

	resp = post(t, g.base+"/chat/completions", chatBody+`}`)
	require.Equal(t, 500, resp.StatusCode)
	require.Empty(t, resp.Header.Get("X-Should-Retry"), "a direct call that Switchyard did not retry")
}
