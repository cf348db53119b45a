package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/router"
)

const claudeAnswer = `{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[{"type":"text","text":"Hi"}],` +
	`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":5,"cache_read_input_tokens":2,"output_tokens":1}}`

const messageJSON = `{"model":"claude","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`

// anthropicError reads Anthropic's error body.
func anthropicError(t *testing.T, body string) (typ, message string) {
	t.Helper()
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type, Message string
		} `json:"error"`
		RequestID string `json:"request_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &e), body)
	require.Equal(t, "error", e.Type, body)
	return e.Error.Type, e.Error.Message
}

func TestMessagesAuth(t *testing.T) {
	t.Parallel()
	p := &fakeMessenger{name: "anth", answer: claudeAnswer}
	r := serveMessages(t, nil, p)
	for _, tc := range []struct {
		name     string
		header   []string
		status   int
		errType  string
		contains string
	}{
		{name: "x-api-key", header: []string{"X-Api-Key", "sk-master"}, status: 200},
		{name: "bearer", header: []string{"Authorization", "Bearer sk-master"}, status: 200},
		{name: "x-api-key wins over authorization", header: []string{"X-Api-Key", "sk-master", "Authorization", "Bearer wrong"}, status: 200},
		{name: "none", status: 401, errType: "authentication_error", contains: "API key"},
		{name: "wrong", header: []string{"X-Api-Key", "sk-wrong"}, status: 401, errType: "authentication_error", contains: "Incorrect API key"},
		{name: "admin key", header: []string{"X-Api-Key", "sk-admin"}, status: 403, errType: "permission_error", contains: "not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := postMessages(t, r, "/v1/messages", messageJSON, tc.header...)
			require.Equal(t, tc.status, resp.StatusCode, body)
			require.NotEmpty(t, resp.Header.Get("Request-Id"))
			if tc.status == 200 {
				require.JSONEq(t, claudeAnswer, body)
				require.Equal(t, "anth/claude", resp.Header.Get("X-Switchyard-Target"))
				return
			}
			typ, msg := anthropicError(t, body)
			require.Equal(t, tc.errType, typ)
			require.Contains(t, msg, tc.contains)
			require.Contains(t, body, `"request_id":"`+resp.Header.Get("Request-Id")+`"`)
		})
	}
	require.Len(t, p.got(), 3, "only the authorized calls reached the provider")
}

func TestMessagesBadInput(t *testing.T) {
	t.Parallel()
	p := &fakeMessenger{name: "anth", answer: claudeAnswer}
	r := serveMessages(t, nil, p)
	key := []string{"X-Api-Key", "sk-master"}
	for _, tc := range []struct {
		name, path, body string
		status           int
		errType, message string
	}{
		{name: "invalid JSON", body: `{"model":`, status: 400, errType: "invalid_request_error", message: "not valid JSON"},
		{name: "missing max_tokens", body: `{"model":"claude","messages":[]}`, status: 400, errType: "invalid_request_error", message: "max_tokens: Field required"},
		{name: "missing max_tokens, stream", body: `{"model":"claude","stream":true,"messages":[]}`, status: 400, errType: "invalid_request_error", message: "max_tokens: Field required"},
		{name: "unknown model", body: `{"model":"nope","max_tokens":1,"messages":[]}`, status: 404, errType: "not_found_error", message: "nope"},
		{name: "unknown model, stream", body: `{"model":"nope","max_tokens":1,"stream":true,"messages":[]}`, status: 404, errType: "not_found_error", message: "nope"},
		{name: "too large", body: `{"model":"claude","max_tokens":1,"messages":[],"pad":"` + strings.Repeat("x", 9<<20) + `"}`,
			status: 413, errType: "request_too_large", message: "larger than the limit"},
		{name: "count_tokens without model", path: "/v1/messages/count_tokens", body: `{"messages":[]}`, status: 400, errType: "invalid_request_error", message: "model: Field required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.path
			if path == "" {
				path = "/v1/messages"
			}
			resp, body := postMessages(t, r, path, tc.body, key...)
			require.Equal(t, tc.status, resp.StatusCode, body)
			require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			typ, msg := anthropicError(t, body)
			require.Equal(t, tc.errType, typ)
			require.Contains(t, msg, tc.message)
		})
	}
	require.Empty(t, p.got(), "no bad request reached the provider")
}

// TestMessagesNativeKeepsTheBody: a Messenger gets the client's bytes with only
// the model rewritten (cache_control, unknown members, spacing all kept).
func TestMessagesNativeKeepsTheBody(t *testing.T) {
	t.Parallel()
	p := &fakeMessenger{name: "anth", answer: claudeAnswer}
	r := serveMessages(t, []router.VirtualModel{chainOf("smart", "anth/claude")}, p)
	body := "{\"model\": \"smart\", \"max_tokens\":10,\n\"system\":[{\"type\":\"text\",\"text\":\"S\",\"cache_control\":{\"type\":\"ephemeral\"}}]," +
		"\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"future_member\":{\"x\":1}}"
	resp, got := postMessages(t, r, "/v1/messages", body, "X-Api-Key", "sk-master")
	require.Equal(t, 200, resp.StatusCode, got)
	require.Equal(t, []string{strings.Replace(body, `"smart"`, `"claude"`, 1)}, p.got())
	line := logLine(t, r, "request")
	require.Equal(t, "CreateMessage", line["method"])
	require.Equal(t, "smart", line["model"])
	require.Equal(t, "anth/claude", line["target"])
	require.EqualValues(t, 7, line["prompt_tokens"], "input plus cached tokens")
	require.EqualValues(t, 1, line["completion_tokens"])
}

func chainOf(source string, targets ...string) router.VirtualModel {
	vm := router.VirtualModel{Source: source, Strategy: router.StrategyFailover, Failover: router.DefaultFailover()}
	for _, t := range targets {
		vm.Targets = append(vm.Targets, router.VirtualTarget{Model: t, Weight: 1})
	}
	return vm
}

// TestMessagesTranslatedForChatTargets: a target without Anthropic's wire gets
// chat and answers in Anthropic's shape; a Claude target failing over to it too.
func TestMessagesTranslatedForChatTargets(t *testing.T) {
	t.Parallel()
	down := &fakeMessenger{name: "anth", err: &providers.Error{Provider: "anth", Status: 529, Type: "overloaded_error", Message: "Overloaded"}}
	gpt := &fakeChat{name: "oai"}
	r := serveMessages(t, []router.VirtualModel{chainOf("smart", "anth/claude", "oai/gpt")}, down, gpt)
	for _, model := range []string{"oai/gpt", "smart"} {
		t.Run(model, func(t *testing.T) {
			resp, body := postMessages(t, r, "/v1/messages", `{"model":"`+model+`","max_tokens":10,"system":"Be brief.","messages":[{"role":"user","content":"hi"}]}`,
				"Authorization", "Bearer sk-master")
			require.Equal(t, 200, resp.StatusCode, body)
			require.Equal(t, "oai/gpt", resp.Header.Get("X-Switchyard-Target"))
			require.JSONEq(t, `{"id":"msg_c1","type":"message","role":"assistant","model":"gpt","content":[{"type":"text","text":"Hello from chat"}],`+
				`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":7,"output_tokens":3,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}`, body)
		})
	}
	require.Len(t, down.got(), 1, "the chain tried the Claude target first")
	require.Len(t, gpt.reqs, 2)
	require.Equal(t, "system", gpt.reqs[1].GetMessages()[0].GetRole())
	require.EqualValues(t, 10, gpt.reqs[1].GetMaxTokens())
}

func TestMessagesUntranslatableIsAClearBadRequest(t *testing.T) {
	t.Parallel()
	gpt := &fakeChat{name: "oai"}
	r := serveMessages(t, nil, gpt)
	resp, body := postMessages(t, r, "/v1/messages", `{"model":"gpt","max_tokens":10,"tools":[{"type":"web_search_20250305","name":"web_search"}],"messages":[]}`,
		"X-Api-Key", "sk-master")
	require.Equal(t, 400, resp.StatusCode, body)
	typ, msg := anthropicError(t, body)
	require.Equal(t, "invalid_request_error", typ)
	require.Contains(t, msg, "tools[0].type")
	require.Contains(t, msg, "provider oai")
	require.Empty(t, gpt.reqs)
}

func TestMessagesErrorTypes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		status  int
		errType string
	}{
		{"bad request", 400, "invalid_request_error"}, {"unauthorized", 401, "authentication_error"},
		{"forbidden", 403, "permission_error"}, {"not found", 404, "not_found_error"},
		{"request timeout", 408, "invalid_request_error"}, {"too large", 413, "request_too_large"},
		{"unprocessable", 422, "invalid_request_error"}, {"rate limited", 429, "rate_limit_error"},
		{"internal error", 500, "api_error"}, {"bad gateway", 502, "api_error"}, {"unavailable", 503, "overloaded_error"},
		{"gateway timeout", 504, "timeout_error"}, {"overloaded", 529, "overloaded_error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.errType, anthropicType(tc.status), tc.status)
		})
	}
}

// TestMessagesUpstreamErrorKeepsItsStatus: an Anthropic upstream's 529 reaches
// the client as 529 overloaded_error, with the retry headers of the chat surface.
func TestMessagesUpstreamErrorKeepsItsStatus(t *testing.T) {
	t.Parallel()
	p := &fakeMessenger{name: "anth", err: &providers.Error{Provider: "anth", Status: 529, Type: "overloaded_error", Message: "Overloaded"}}
	r := serveMessages(t, nil, p)
	for _, body := range []string{messageJSON, strings.Replace(messageJSON, `"max_tokens"`, `"stream":true,"max_tokens"`, 1)} {
		resp, got := postMessages(t, r, "/v1/messages", body, "X-Api-Key", "sk-master")
		require.Equal(t, 529, resp.StatusCode, got)
		typ, msg := anthropicError(t, got)
		require.Equal(t, "overloaded_error", typ)
		require.Equal(t, "Overloaded", msg)
	}
}

func TestMessagesCountTokens(t *testing.T) {
	t.Parallel()
	anth := &fakeMessenger{name: "anth"}
	gpt := &fakeChat{name: "oai"}
	r := serveMessages(t, nil, anth, gpt)
	resp, body := postMessages(t, r, "/v1/messages/count_tokens", `{"model":"anth/claude","messages":[{"role":"user","content":"hi"}]}`, "X-Api-Key", "sk-master")
	require.Equal(t, 200, resp.StatusCode, body)
	require.JSONEq(t, `{"input_tokens":42}`, body)
	require.Equal(t, []string{`{"model":"claude","messages":[{"role":"user","content":"hi"}]}`}, anth.got())

	// Along a chain, a target that cannot count is skipped.
	r2 := serveMessages(t, []router.VirtualModel{chainOf("mixed", "oai/gpt", "anth/claude")}, anth, gpt)
	resp, body = postMessages(t, r2, "/v1/messages/count_tokens", `{"model":"mixed","messages":[]}`, "X-Api-Key", "sk-master")
	require.Equal(t, 200, resp.StatusCode, body)
	require.Equal(t, "anth/claude", resp.Header.Get("X-Switchyard-Target"))

	resp, body = postMessages(t, r, "/v1/messages/count_tokens", `{"model":"oai/gpt","messages":[]}`, "X-Api-Key", "sk-master")
	require.Equal(t, 404, resp.StatusCode, body)
	typ, msg := anthropicError(t, body)
	require.Equal(t, "not_found_error", typ)
	require.Contains(t, msg, "provider oai does not count tokens")
	require.Equal(t, "CountTokens", logLine(t, r, "request", "model", "oai/gpt")["method"])
}
