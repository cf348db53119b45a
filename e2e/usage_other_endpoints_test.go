package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/fakeupstream"
)

// Passthrough and count_tokens calls are answered requests too: each has its
// record, with its endpoint and target.
func TestUsageRecordsPassthroughAndCountTokens(t *testing.T) {
	t.Parallel()
	anth := fakeupstream.NewAnthropic()
	t.Cleanup(anth.Close)
	g := start(t, keysYAML, withYAML("  anth:\n    type: anthropic\n    base_url: "+anth.URL+"\n    api_key: sk-ant-upstream\n"))

	req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(g.base, "/v1")+"/p/up/models", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer sk-master")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	ct := post(t, strings.TrimSuffix(g.base, "/v1")+"/v1/messages/count_tokens",
		`{"model":"anth/`+claudeModel+`","messages":[{"role":"user","content":"hi"}]}`, "x-api-key", "sk-master")
	require.Equal(t, http.StatusOK, ct.StatusCode)

	byEndpoint := map[string]map[string]any{}
	for _, r := range waitRecords(t, g, 2) {
		rec := r.(map[string]any)
		byEndpoint[rec["endpoint"].(string)] = rec
	}
	require.Contains(t, byEndpoint, "passthrough")
	require.Equal(t, "up", byEndpoint["passthrough"]["provider"])
	attempts := byEndpoint["passthrough"]["attempts"].([]any)
	require.Equal(t, "up", attempts[0].(map[string]any)["target"], "a call to the provider, not to one of its models")
	require.EqualValues(t, 200, byEndpoint["passthrough"]["status"])
	require.Contains(t, byEndpoint, "count_tokens")
	require.Equal(t, "anth/"+claudeModel, byEndpoint["count_tokens"]["model"])
}

// A stream the upstream began and then cut was still billed: its record carries
// the admission estimate, marked estimated, and a cost — never nothing.
func TestUsageRecordsACutStreamAsEstimated(t *testing.T) {
	t.Parallel()
	g := start(t, keysYAML, withYAML(usageYAML))
	g.up.Script(fakeupstream.Reply{Text: "a b c d e", CutAfter: 3})
	resp := post(t, g.base+"/chat/completions", chatBody+`,"stream":true}`, "Authorization", "Bearer sk-master")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	events := sseEvents(t, resp)
	require.NotEqual(t, "[DONE]", events[len(events)-1], "the cut is the client's error")
	rec := waitRecords(t, g, 1)[0].(map[string]any)
	require.Equal(t, true, rec["tokens_estimated"], "%v", rec)
	require.NotNil(t, rec["cost_usd"], "%v", rec)
	require.NotEmpty(t, rec["error_code"])
}

// /v1/messages streams are estimated as chat streams are when the upstream
// does not say what it used: a chat upstream that sent no usage (the
// translation writes zeros, which are not a report), or an Anthropic stream
// cut after its message_start (whose output_tokens is a placeholder): the
// prompt it told, the completion estimated. Before, both were recorded as
// reported, with no or one completion token and no cost.
func TestUsageEstimatesMessagesStreamsThatDidNotSay(t *testing.T) {
	t.Parallel()
	anth := fakeupstream.NewAnthropic()
	t.Cleanup(anth.Close)
	g := start(t, keysYAML, withYAML("  anth:\n    type: anthropic\n    base_url: "+anth.URL+"\n    api_key: sk-ant-upstream\n"+
		"pricing:\n  up/gpt-4o: {input: 1, output: 2}\n  anth/"+claudeModel+": {input: 1, output: 2}\n"))
	stream := func(model string) {
		resp := post(t, strings.TrimSuffix(g.base, "/v1")+"/v1/messages",
			`{"model":"`+model+`","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hello there"}]}`, "x-api-key", "sk-master")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		_, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	head := `{"id":"x","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":`
	g.up.Script(fakeupstream.Reply{Events: []string{head + `{"role":"assistant","content":"hi"}}]}`,
		head + `{},"finish_reason":"stop"}]}`, "[DONE]"}})
	stream("up/gpt-4o")
	anth.Script(fakeupstream.Reply{Events: fakeupstream.AnthropicStream("msg_c", claudeModel, "one two three"), CutAfter: 5})
	stream("anth/" + claudeModel)

	byModel := map[string]map[string]any{}
	for _, r := range waitRecords(t, g, 2) {
		rec := r.(map[string]any)
		byModel[rec["model"].(string)] = rec
	}
	translated, cut := byModel["up/gpt-4o"], byModel["anth/"+claudeModel]
	require.EqualValues(t, 200, translated["status"], "%v", translated)
	require.Equal(t, true, translated["tokens_estimated"], "%v", translated)
	require.NotNil(t, translated["cost_usd"], "%v", translated)
	require.Equal(t, true, cut["tokens_estimated"], "%v", cut)
	require.EqualValues(t, "10", cut["prompt_tokens"], "the prompt message_start told: %v", cut)
	require.NotEqual(t, "1", cut["completion_tokens"], "not message_start's placeholder: %v", cut)
	require.NotNil(t, cut["cost_usd"], "%v", cut)
}
