package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	adminpb "github.com/switchyard/switchyard/gen/switchyard/admin/v1"
	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/fakeupstream"
)

// Hedged first token (issue 15, item 5): hedge_after starts the backup beside a
// primary that has produced nothing yet; the first to produce content wins.

// hedgeChain runs Switchyard with "up" (primary) and "backup" behind the virtual
// model hedge-chat with hedge_after 200ms.
func hedgeChain(t *testing.T) (*gateway, *fakeupstream.Server) {
	t.Helper()
	backup := fakeupstream.New("gpt-4o-mini")
	t.Cleanup(backup.Close)
	backup.SetDefault(fakeupstream.Reply{Text: "Hello from the backup!"})
	g := start(t, "", withYAML("  backup:\n    type: openai\n    base_url: "+backup.URL+"\n"+
		"virtual_models:\n  - source: hedge-chat\n    hedge_after: 200ms\n    targets:\n"+
		"      - model: up/gpt-4o\n      - model: backup/gpt-4o-mini\n"))
	return g, backup
}

// TestHedgeBackupWinsOverASlowPrimary: a primary that answers nothing (a stream:
// only its role chunk) within hedge_after gets the backup started too; the
// backup's answer reaches the client at once and the primary's upstream request
// is closed. Each case runs on a fresh gateway (the cap allows one hedge in ten
// requests). REST and gRPC, stream and unary.
func TestHedgeBackupWinsOverASlowPrimary(t *testing.T) {
	t.Parallel()
	slowStream := fakeupstream.Reply{StallAfter: 1, Stall: time.Minute}
	slowUnary := fakeupstream.Reply{Delay: time.Minute}
	cases := []struct {
		name string
		slow fakeupstream.Reply
		call func(t *testing.T, g *gateway) (text, target string)
	}{
		{"REST stream", slowStream, func(t *testing.T, g *gateway) (string, string) {
			resp := restStream(t, g, "hedge-chat", "")
			require.Equal(t, http.StatusOK, resp.StatusCode)
			text, done, _ := sseText(t, sseEvents(t, resp))
			require.True(t, done)
			return text, resp.Header.Get("X-Switchyard-Target")
		}},
		{"REST unary", slowUnary, func(t *testing.T, g *gateway) (string, string) {
			resp := post(t, g.base+"/chat/completions", strings.Replace(chatBody, "up/gpt-4o", "hedge-chat", 1)+`}`)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			return readCompletionText(t, resp), resp.Header.Get("X-Switchyard-Target")
		}},
		{"gRPC stream", slowStream, func(t *testing.T, g *gateway) (string, string) {
			text, err, hdr := grpcStreamText(t, g, "hedge-chat", nil)
			require.NoError(t, err)
			return text, strings.Join(hdr.Get("x-switchyard-target"), ",")
		}},
		{"gRPC unary", slowUnary, func(t *testing.T, g *gateway) (string, string) {
			req := grpcReq()
			req.Model = "hedge-chat"
			var hdr metadata.MD
			resp, err := pb.NewChatServiceClient(g.conn).CreateChatCompletion(context.Background(), req, grpc.Header(&hdr))
			require.NoError(t, err)
			return resp.GetChoices()[0].GetMessage().GetContent().GetStringValue(), strings.Join(hdr.Get("x-switchyard-target"), ",")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, backup := hedgeChain(t)
			g.up.SetDefault(tc.slow)
			t0 := time.Now()
			text, target := tc.call(t, g)
			require.Less(t, time.Since(t0), 20*time.Second, "the backup answered, not the slow primary")
			require.Equal(t, "Hello from the backup!", text)
			require.Equal(t, "backup/gpt-4o-mini", target)
			require.Equal(t, 1, g.up.Count())
			require.Equal(t, 1, backup.Count())
			require.Eventually(t, func() bool { return g.up.Gone() == 1 }, 10*time.Second, 10*time.Millisecond,
				"the primary's upstream request was closed")
			m := scrape(t, g)
			require.Equal(t, 1.0, m[key("switchyard_hedges_total", "virtual_model", "hedge-chat", "outcome", "backup_won")])
			require.Contains(t, g.logs.String(), `"hedged":true`, "the request line says it was hedged")
		})
	}
}

// TestHedgesAreCappedPerVirtualModel: with every primary slow, only one request
// in ten is hedged; the others wait for their primary, which then answers.
func TestHedgesAreCappedPerVirtualModel(t *testing.T) {
	t.Parallel()
	g, backup := hedgeChain(t)
	g.up.SetDefault(fakeupstream.Reply{Delay: 500 * time.Millisecond})
	body := strings.Replace(chatBody, "up/gpt-4o", "hedge-chat", 1) + `}`
	targets := map[string]int{}
	for range 3 {
		resp := post(t, g.base+"/chat/completions", body)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		targets[resp.Header.Get("X-Switchyard-Target")]++
	}
	require.Equal(t, map[string]int{"backup/gpt-4o-mini": 1, "up/gpt-4o": 2}, targets)
	require.Equal(t, 1, backup.Count(), "the backup was started once")
	m := scrape(t, g)
	require.Equal(t, 1.0, m[key("switchyard_hedges_total", "virtual_model", "hedge-chat", "outcome", "backup_won")])
	require.Equal(t, 2.0, m[key("switchyard_hedges_total", "virtual_model", "hedge-chat", "outcome", "capped")])
}

// TestNoHedgeForAFastPrimary: a primary that answers within hedge_after is the
// only request made.
func TestNoHedgeForAFastPrimary(t *testing.T) {
	t.Parallel()
	g, backup := hedgeChain(t)
	resp := restStream(t, g, "hedge-chat", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "up/gpt-4o", resp.Header.Get("X-Switchyard-Target"))
	_, done, _ := sseText(t, sseEvents(t, resp))
	require.True(t, done)
	require.Equal(t, 0, backup.Count())
	require.Contains(t, g.logs.String(), `"hedged":false`)
}

// readCompletionText is the first choice's content of a REST chat completion.
func readCompletionText(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	var c struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&c))
	require.NotEmpty(t, c.Choices)
	return c.Choices[0].Message.Content
}

// TestHedgeAdminAPI: hedge_after set through the admin API is shown back as
// written, hedges, and is checked.
func TestHedgeAdminAPI(t *testing.T) {
	t.Parallel()
	g, backup := hedgeChain(t)
	admin := adminpb.NewAdminServiceClient(g.conn)
	ctx := context.Background()
	vm := &adminpb.VirtualModel{Source: "hedged-api", HedgeAfter: "150ms", Targets: []*adminpb.VirtualModelTarget{
		{Model: "up/gpt-4o"}, {Model: "backup/gpt-4o-mini"}}}
	_, err := admin.UpsertVirtualModel(ctx, &adminpb.UpsertVirtualModelRequest{VirtualModel: vm})
	require.NoError(t, err)
	got, err := admin.GetVirtualModel(ctx, &adminpb.GetVirtualModelRequest{Source: "hedged-api"})
	require.NoError(t, err)
	require.Equal(t, "150ms", got.GetVirtualModel().GetHedgeAfter())

	g.up.SetDefault(fakeupstream.Reply{StallAfter: 1, Stall: time.Minute})
	resp := restStream(t, g, "hedged-api", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "backup/gpt-4o-mini", resp.Header.Get("X-Switchyard-Target"))
	text, done, _ := sseText(t, sseEvents(t, resp))
	require.True(t, done)
	require.Equal(t, "Hello from the backup!", text)
	require.Equal(t, 1, backup.Count())

	for _, bad := range []string{"soon", "-1s"} {
		vm.HedgeAfter = bad
		_, err = admin.UpsertVirtualModel(ctx, &adminpb.UpsertVirtualModelRequest{VirtualModel: vm})
		require.Equal(t, codes.InvalidArgument, status.Code(err), bad)
	}
}
