package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/fakeupstream"
	"github.com/switchyard/switchyard/usage"
)

// usageYAML prices up/gpt-4o at $1 in and $2 out per million tokens: the fake
// upstream's 17 prompt and 4 completion tokens cost $0.000025.
const usageYAML = "pricing:\n  up/gpt-4o: {input: 1, output: 2, cached_input: 0.5}\n"

const fakeCost = "0.000025"

func getAdmin(t *testing.T, g *gateway, path string) map[string]any {
	t.Helper()
	code, m := adminREST(t, g, http.MethodGet, path, "")
	require.Equal(t, http.StatusOK, code, "%s: %v", path, m)
	return m
}

// waitRecords waits until the ledger holds n records (the writer is asynchronous).
func waitRecords(t *testing.T, g *gateway, n int) []any {
	t.Helper()
	var recs []any
	require.Eventually(t, func() bool {
		recs, _ = getAdmin(t, g, "/admin/v1/requests?page_size=1000")["records"].([]any)
		return len(recs) >= n
	}, 10*time.Second, 20*time.Millisecond)
	return recs
}

func masterCtx() context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer sk-master")
}

// TestUsageLedger: every answered request is recorded (REST and gRPC, unary and
// stream, errors too) in usage.db; callers get their usage and cost back (gRPC
// trailers; REST headers on non-stream answers); "spend by key and model for the
// last day" answers over REST and grpcurl; ListRequests shows why a request failed.
func TestUsageLedger(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	g := start(t, keysYAML+"  data_dir: "+dir+"\n", withYAML(usageYAML))
	auth := []string{"Authorization", "Bearer sk-master"}

	t.Run("REST non-stream answers carry usage and cost headers", func(t *testing.T) {
		resp := post(t, g.base+"/chat/completions", chatBody+"}", auth...)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, fakeCost, resp.Header.Get("X-Switchyard-Cost-Usd"))
		require.Equal(t, "17", resp.Header.Get("X-Switchyard-Prompt-Tokens"))
		require.Equal(t, "4", resp.Header.Get("X-Switchyard-Completion-Tokens"))
		require.Equal(t, "0", resp.Header.Get("X-Switchyard-Cached-Tokens"))
	})
	t.Run("REST streams are recorded, no header", func(t *testing.T) {
		resp := post(t, g.base+"/chat/completions", chatBody+`,"stream":true}`, auth...)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		_, _ = io.ReadAll(resp.Body)
		require.Empty(t, resp.Header.Get("X-Switchyard-Cost-Usd"))
	})
	t.Run("a model without a price has tokens and no cost", func(t *testing.T) {
		resp := post(t, g.base+"/chat/completions", `{"model":"up/gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`, auth...)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Empty(t, resp.Header.Get("X-Switchyard-Cost-Usd"))
		require.Equal(t, "17", resp.Header.Get("X-Switchyard-Prompt-Tokens"))
	})
	t.Run("gRPC callers get usage and cost in trailers, unary and stream", func(t *testing.T) {
		c := pb.NewChatServiceClient(g.conn)
		req := &pb.ChatCompletionRequest{Model: "up/gpt-4o", Messages: []*pb.ChatMessage{{Role: "user", Content: structpb.NewStringValue("hi")}}}
		var tr metadata.MD
		_, err := c.CreateChatCompletion(masterCtx(), req, grpc.Trailer(&tr))
		require.NoError(t, err)
		require.Equal(t, []string{fakeCost}, tr.Get("x-switchyard-cost-usd"))
		require.Equal(t, []string{"17"}, tr.Get("x-switchyard-prompt-tokens"))
		require.Equal(t, []string{"4"}, tr.Get("x-switchyard-completion-tokens"))
		st, err := c.StreamChatCompletion(masterCtx(), req)
		require.NoError(t, err)
		for {
			if _, err := st.Recv(); err != nil {
				require.ErrorIs(t, err, io.EOF)
				break
			}
		}
		require.Equal(t, []string{fakeCost}, st.Trailer().Get("x-switchyard-cost-usd"))
	})
	t.Run("a refused request is recorded with its status and code", func(t *testing.T) {
		resp := post(t, g.base+"/chat/completions", `{"model":"up/gpt-4o"}`, auth...)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	})

	recs := waitRecords(t, g, 6)
	require.Len(t, recs, 6)
	_, err := os.Stat(filepath.Join(dir, usage.FileName))
	require.NoError(t, err, "the default store is usage.db in data_dir")

	t.Run("spend by key and model for the last day, over REST", func(t *testing.T) {
		out := getAdmin(t, g, "/admin/v1/usage?since=24h&group_by=key&group_by=model")
		groups := out["groups"].([]any)
		byModel := map[string]map[string]any{}
		for _, x := range groups {
			gr := x.(map[string]any)
			require.True(t, strings.HasPrefix(gr["key_id"].(string), "master:"), "%v", gr)
			byModel[gr["model"].(string)] = gr
		}
		gpt := byModel["up/gpt-4o"]
		require.EqualValues(t, "5", gpt["requests"], "REST unary+stream, gRPC unary+stream, the refused one: %v", gpt)
		require.EqualValues(t, "1", gpt["errors"])
		require.InDelta(t, 4*0.000025, gpt["cost_usd"], 1e-12)
		require.EqualValues(t, "68", gpt["prompt_tokens"])
		mini := byModel["up/gpt-4o-mini"]
		require.EqualValues(t, "1", mini["unpriced_requests"])
		require.Zero(t, mini["cost_usd"])
	})
	t.Run("the same over grpcurl", func(t *testing.T) {
		out := adminCall(t, g, "QueryUsage", `{"since":"24h","group_by":["key","model"]}`)
		require.Len(t, out["groups"], 2)
	})
	t.Run("why did this request fail", func(t *testing.T) {
		out := getAdmin(t, g, "/admin/v1/requests?errors_only=true")
		list := out["records"].([]any)
		require.Len(t, list, 1)
		r := list[0].(map[string]any)
		require.EqualValues(t, 400, r["status"])
		require.Equal(t, "invalid_request_error", r["error_code"])
		require.Equal(t, "rest", r["surface"])
	})
	t.Run("records list their attempts and timing, never text", func(t *testing.T) {
		for _, x := range recs {
			r := x.(map[string]any)
			raw, _ := json.Marshal(r)
			require.NotContains(t, string(raw), `"hi"`, "no prompt text in the ledger")
			if r["status"] != float64(200) {
				continue
			}
			atts := r["attempts"].([]any)
			require.Len(t, atts, 1, "%v", r)
			a := atts[0].(map[string]any)
			require.Equal(t, "ok", a["outcome"])
			require.EqualValues(t, 200, a["status"])
			require.Positive(t, r["latency_ms"])
			if r["stream"] == true {
				require.Positive(t, r["ttft_ms"], "%v", r)
			}
		}
	})
	t.Run("bad queries are 400s", func(t *testing.T) {
		code, _ := adminREST(t, g, http.MethodGet, "/admin/v1/usage?group_by=prompt", "")
		require.Equal(t, http.StatusBadRequest, code)
		code, _ = adminREST(t, g, http.MethodGet, "/admin/v1/usage?since=yesterday", "")
		require.Equal(t, http.StatusBadRequest, code)
	})
	t.Run("since in days", func(t *testing.T) {
		code, body := adminREST(t, g, http.MethodGet, "/admin/v1/usage?since=7d&group_by=model", "")
		require.Equal(t, http.StatusOK, code, body)
		out := adminCall(t, g, "QueryUsage", `{"since":"1d12h","group_by":["model"]}`)
		require.NotEmpty(t, out["groups"], "%v", out)
	})
}

// TestUsageBudget: a virtual key's budget_usd per budget_period refuses its calls
// with 429 insufficient_quota once spent; the running total is seeded from the
// store at start, so a restart does not forget it.
func TestUsageBudget(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	server := keysYAML + "  data_dir: " + dir + "\n"
	g := start(t, server, withYAML(usageYAML))
	_, secret := createKey(t, g, `{"name":"capped","models":["*"],"budget_usd":0.00005,"budget_period":"day"}`)
	auth := []string{"Authorization", "Bearer " + secret}
	for range 2 {
		resp := post(t, g.base+"/chat/completions", chatBody+"}", auth...)
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	resp := post(t, g.base+"/chat/completions", chatBody+"}", auth...)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	e := readError(t, resp)
	require.Equal(t, "insufficient_quota", e.Error.Type)
	require.Equal(t, "insufficient_quota", *e.Error.Code)
	require.Contains(t, e.Error.Message, "its budget of $0.00005 for this day", "the budget as set, not rounded to cents")
	other := post(t, g.base+"/chat/completions", chatBody+"}", "Authorization", "Bearer sk-master")
	require.Equal(t, http.StatusOK, other.StatusCode, "the master key has no budget")

	recs := waitRecords(t, g, 4) // the refusal was answered, so it is recorded too
	refused := 0
	for _, r := range recs {
		if rec := r.(map[string]any); rec["status"] == float64(http.StatusTooManyRequests) {
			refused++
			require.Equal(t, "insufficient_quota", rec["error_code"], "%v", rec)
			require.Equal(t, "up/gpt-4o", rec["model"])
		}
	}
	require.Equal(t, 1, refused)
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, g.app.Shutdown(sctx))
	again := start(t, server, withYAML(usageYAML))
	resp = post(t, again.base+"/chat/completions", chatBody+"}", auth...)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "the spend was seeded from the store")
}

// TestStreamUsageDetailsReachTheLedger: a REST stream is relayed without being
// decoded, and its usage chunk's cached and reasoning tokens still reach its
// record (read from the chunk's inspection).
func TestStreamUsageDetailsReachTheLedger(t *testing.T) {
	t.Parallel()
	g := start(t, keysYAML+"  data_dir: "+t.TempDir()+"\n", withYAML(usageYAML))
	head := `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o",`
	g.up.Script(fakeupstream.Reply{Events: []string{
		head + `"choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":null}]}`,
		head + `"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		head + `"choices":[],"usage":{"prompt_tokens":30,"completion_tokens":9,"total_tokens":39,` +
			`"prompt_tokens_details":{"cached_tokens":12},"completion_tokens_details":{"reasoning_tokens":5}}}`,
		"[DONE]",
	}})
	resp := post(t, g.base+"/chat/completions", chatBody+`,"stream":true}`, "Authorization", "Bearer sk-master")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, _ := io.ReadAll(resp.Body)
	require.Contains(t, string(body), `"content":"hi"`)
	r := waitRecords(t, g, 1)[0].(map[string]any)
	require.EqualValues(t, "30", r["prompt_tokens"], "%v", r)
	require.EqualValues(t, "9", r["completion_tokens"])
	require.EqualValues(t, "12", r["cached_tokens"])
	require.EqualValues(t, "5", r["reasoning_tokens"])
	require.NotEqual(t, true, r["tokens_estimated"])
}

// TestUsageRetention: with usage.retention set, a gateway deletes the records
// older than it from its store, at start (and hourly), and keeps the rest.
func TestUsageRetention(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := usage.OpenSQLite(context.Background(), filepath.Join(dir, usage.FileName))
	require.NoError(t, err)
	now := time.Now()
	require.NoError(t, st.Write(context.Background(), []usage.Record{
		{Time: now.Add(-40 * 24 * time.Hour), RequestID: "old", Surface: usage.SurfaceREST, Endpoint: usage.EndpointChat, KeyID: "k", Model: "m", Status: 200},
		{Time: now.Add(-10 * 24 * time.Hour), RequestID: "recent", Surface: usage.SurfaceREST, Endpoint: usage.EndpointChat, KeyID: "k", Model: "m", Status: 200},
	}))
	require.NoError(t, st.Close())

	g := start(t, keysYAML+"  data_dir: "+dir+"\n", withYAML(usageYAML+"usage:\n  retention: 768h\n"))
	require.Eventually(t, func() bool {
		recs, _ := getAdmin(t, g, "/admin/v1/requests?page_size=1000&since=2160h")["records"].([]any)
		return len(recs) == 1 && recs[0].(map[string]any)["request_id"] == "recent"
	}, 10*time.Second, 20*time.Millisecond, "the 40-day-old record is pruned, the 10-day-old one kept")
}

// TestNegativeUsageCountsAsNone: an upstream that reports negative token counts
// bills nothing for them: the caller's usage headers, the ledger's record and its
// totals count them as 0, never as a negative cost (it was -1000 tokens and a
// cost of -0.002 in the headers, and a negative total in the ledger).
func TestNegativeUsageCountsAsNone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	g := start(t, keysYAML+"  data_dir: "+dir+"\n", withYAML(usageYAML))
	g.up.SetDefault(fakeupstream.Reply{Body: `{"id":"x","object":"chat.completion","created":1,"model":"gpt-4o",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":-1000,"completion_tokens":-1000,"total_tokens":-2000}}`})
	resp := post(t, g.base+"/chat/completions", chatBody+"}", "Authorization", "Bearer sk-master")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "0", resp.Header.Get("X-Switchyard-Prompt-Tokens"))
	require.Equal(t, "0", resp.Header.Get("X-Switchyard-Completion-Tokens"))
	require.NotContains(t, resp.Header.Get("X-Switchyard-Cost-Usd"), "-")
	recs := waitRecords(t, g, 1)
	raw, err := json.Marshal(recs)
	require.NoError(t, err)
	require.NotContains(t, string(raw), ":-", "no negative count or cost in the ledger: %s", raw)
}
