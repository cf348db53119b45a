package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	adminpb "github.com/switchyard/switchyard/gen/switchyard/admin/v1"
	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/fakeupstream"
)

// scrape reads /metrics into "name{k="v",...}" → value, labels sorted as Prometheus writes them.
func scrape(t *testing.T, g *gateway) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + g.app.HTTPAddr() + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		require.NoError(t, err, line)
		out[line[:i]] = v
	}
	return out
}

// key builds a series name with labels sorted.
func key(name string, labels ...string) string {
	var pairs []string
	for i := 0; i+1 < len(labels); i += 2 {
		pairs = append(pairs, labels[i]+`="`+labels[i+1]+`"`)
	}
	sort.Strings(pairs)
	return name + "{" + strings.Join(pairs, ",") + "}"
}

func delta(before, after map[string]float64, k string) float64 { return after[k] - before[k] }

func TestMetricsMoveForEachResilienceEvent(t *testing.T) {
	t.Parallel()
	backup := fakeupstream.New("gpt-4o-mini")
	t.Cleanup(backup.Close)
	g := start(t, "", withYAML("  backup:\n    type: openai\n    base_url: "+backup.URL+"\n"+
		"resilience:\n  retry:\n    max_retries: 1\n    initial_backoff: 1ms\n  circuit_breaker:\n    failure_threshold: 2\n    timeout: 1h\n"+
		"virtual_models:\n  - source: chain\n    targets:\n      - model: up/gpt-4o\n      - model: backup/gpt-4o-mini\n"))
	chain := strings.Replace(chatBody, "up/gpt-4o", "chain", 1) + `}`

	// A retry that succeeds.
	before := scrape(t, g)
	g.up.Script(fakeupstream.Reply{Status: 503}, fakeupstream.Reply{})
	require.Equal(t, 200, post(t, g.base+"/chat/completions", chatBody+`}`).StatusCode)
	after := scrape(t, g)
	require.Equal(t, 1.0, delta(before, after, key("switchyard_retries_total", "provider", "up", "model", "gpt-4o")))
	require.Equal(t, 1.0, delta(before, after, key("switchyard_upstream_attempts_total", "provider", "up", "model", "gpt-4o", "outcome", "retryable_status")))
	require.Equal(t, 1.0, delta(before, after, key("switchyard_upstream_attempts_total", "provider", "up", "model", "gpt-4o", "outcome", "success")))
	require.Equal(t, 1.0, delta(before, after, key("switchyard_requests_total", "surface", "rest", "endpoint", "CreateChatCompletion",
		"provider", "up", "model", "gpt-4o", "status_class", "2xx", "stream", "false")))
	require.Equal(t, 17.0, delta(before, after, key("switchyard_tokens_total", "provider", "up", "model", "gpt-4o", "type", "prompt")))

	// A hidden error in a 200, then failover to the backup.
	before = after
	g.up.Script(fakeupstream.Reply{Body: `{"error":{"message":"boom","code":"internal"}}`}, fakeupstream.Reply{Body: `{"error":{"message":"boom","code":"internal"}}`})
	require.Equal(t, 200, post(t, g.base+"/chat/completions", chain).StatusCode)
	after = scrape(t, g)
	require.Equal(t, 2.0, delta(before, after, key("switchyard_hidden_errors_total", "provider", "up", "status", "502")))
	require.Equal(t, 1.0, delta(before, after, key("switchyard_failovers_total", "from", "up/gpt-4o", "to", "backup/gpt-4o-mini", "reason", "status_5xx")))

	// That exhausted sequence was the breaker's first failure; one more opens it.
	before = after
	g.up.Script(fakeupstream.Reply{Status: 502}, fakeupstream.Reply{Status: 502})
	require.Equal(t, 200, post(t, g.base+"/chat/completions", chain).StatusCode)
	after = scrape(t, g)
	require.Equal(t, 1.0, delta(before, after, key("switchyard_breaker_transitions_total", "provider", "up", "model", "", "from", "closed", "to", "open")))
	require.Equal(t, 2.0, after[key("switchyard_breaker_state", "provider", "up", "model", "")], "open")
	require.Equal(t, 0.0, after[key("switchyard_breaker_state", "provider", "backup", "model", "")], "closed")
	before = after
	require.Equal(t, 200, post(t, g.base+"/chat/completions", chain).StatusCode)
	after = scrape(t, g)
	require.Equal(t, 1.0, delta(before, after, key("switchyard_failovers_total", "from", "up/gpt-4o", "to", "backup/gpt-4o-mini", "reason", "breaker_open")))

	// An empty 200 and a truncated stream on the backup.
	before = after
	empty := fakeupstream.Reply{Body: `{"id":"x","object":"chat.completion","choices":[]}`}
	backup.Script(empty, empty) // 502 is retried once
	resp := post(t, g.base+"/chat/completions", strings.Replace(chatBody, "up/gpt-4o", "backup/gpt-4o-mini", 1)+`}`)
	require.Equal(t, 502, resp.StatusCode)
	backup.Script(fakeupstream.Reply{CutAfter: 2})
	resp = post(t, g.base+"/chat/completions", strings.Replace(chatBody, "up/gpt-4o", "backup/gpt-4o-mini", 1)+`,"stream":true}`)
	_, _ = io.ReadAll(resp.Body)
	after = scrape(t, g)
	require.Equal(t, 2.0, delta(before, after, key("switchyard_empty_responses_total", "provider", "backup", "reason", "no_choices")))
	cut := delta(before, after, key("switchyard_incomplete_streams_total", "provider", "backup", "reason", "closed_early")) +
		delta(before, after, key("switchyard_incomplete_streams_total", "provider", "backup", "reason", "read_error"))
	require.Equal(t, 1.0, cut, "a reset mid-stream is counted (closed_early or read_error, as the OS reports it)")
	require.Equal(t, 1.0, delta(before, after, key("switchyard_requests_total", "surface", "rest", "endpoint", "StreamChatCompletion",
		"provider", "backup", "model", "gpt-4o-mini", "status_class", "5xx", "stream", "true")),
		"a stream that broke after its headers counts by its outcome (502 stream_incomplete), not the 200 it started with")
	require.Equal(t, 1.0, delta(before, after, key("switchyard_breaker_transitions_total", "provider", "backup", "model", "", "from", "closed", "to", "open")),
		"the broken stream was backup's second breaker failure (after the empty sequence): it opened")
	_, err := adminpb.NewAdminServiceClient(g.conn).ResetBreaker(context.Background(), &adminpb.ResetBreakerRequest{Provider: "backup"})
	require.NoError(t, err)

	// Unknown models do not explode label cardinality.
	before = after
	require.Equal(t, 200, post(t, g.base+"/chat/completions", strings.Replace(chatBody, "up/gpt-4o", "backup/made-up-123", 1)+`}`).StatusCode)
	after = scrape(t, g)
	require.Equal(t, 1.0, delta(before, after, key("switchyard_requests_total", "surface", "rest", "endpoint", "CreateChatCompletion",
		"provider", "backup", "model", "other", "status_class", "2xx", "stream", "false")))
	for k := range after {
		require.NotContains(t, k, "made-up-123")
	}
}

func TestRequestLogLines(t *testing.T) {
	t.Parallel()
	g := start(t, "", withYAML("resilience:\n  retry:\n    initial_backoff: 1ms\n"))
	g.up.Script(fakeupstream.Reply{Status: 429}, fakeupstream.Reply{})
	resp := post(t, g.base+"/chat/completions", chatBody+`}`, "X-Request-Id", "log-me")
	require.Equal(t, 200, resp.StatusCode)
	var line map[string]any
	var attemptLines int
	for _, l := range strings.Split(g.logs.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(l), &rec) != nil || rec["request_id"] != "log-me" {
			continue
		}
		switch rec["msg"] {
		case "request":
			line = rec
		case "upstream attempt failed":
			attemptLines++
		}
	}
	require.NotNil(t, line, "one line per request")
	require.Equal(t, "rest", line["surface"])
	require.Equal(t, "up/gpt-4o", line["model"])
	require.Equal(t, "up/gpt-4o", line["target"])
	require.Equal(t, float64(2), line["attempts"])
	require.Equal(t, float64(0), line["failovers"])
	require.Equal(t, float64(200), line["status"])
	require.Equal(t, float64(17), line["prompt_tokens"])
	require.Equal(t, 0, attemptLines, "per-attempt lines are debug-level: the request line carries the attempts")
}

func TestUsageChunkOnlyForClientsThatAskForIt(t *testing.T) {
	t.Parallel()
	g := start(t, "")
	resp := post(t, g.base+"/chat/completions", chatBody+`,"stream":true}`)
	events := sseEvents(t, resp)
	for _, ev := range events {
		require.NotContains(t, ev, `"usage"`, "the client did not ask for usage")
	}
	so := g.up.Requests()[0].JSON()["stream_options"].(map[string]any)
	require.Equal(t, true, so["include_usage"], "Switchyard asked the upstream, to count tokens")
	after := scrape(t, g)
	require.Equal(t, 4.0, after[key("switchyard_tokens_total", "provider", "up", "model", "gpt-4o", "type", "completion")])

	// The same over gRPC, where chunks are decoded rather than relayed.
	st, err := pb.NewChatServiceClient(g.conn).StreamChatCompletion(context.Background(), grpcReq())
	require.NoError(t, err)
	text, usage := readGRPCStream(t, st)
	require.Equal(t, "Hello from the fake upstream!", text)
	require.Nil(t, usage, "the client did not ask for usage")
	so = g.up.Requests()[1].JSON()["stream_options"].(map[string]any)
	require.Equal(t, true, so["include_usage"])
	after = scrape(t, g)
	require.Equal(t, 8.0, after[key("switchyard_tokens_total", "provider", "up", "model", "gpt-4o", "type", "completion")])
}
