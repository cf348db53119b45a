package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/fakeupstream"
)

// createKey makes a virtual key through grpcurl and returns its id and secret.
func createKey(t *testing.T, g *gateway, body string) (id, secret string) {
	t.Helper()
	out := adminCall(t, g, "CreateKey", body)
	secret, _ = out["secret"].(string)
	require.True(t, strings.HasPrefix(secret, "sk-sy-"), "%v", out)
	return out["key"].(map[string]any)["id"].(string), secret
}

// sdkError is the SDK's error for err.
func sdkError(t *testing.T, err error) *openai.Error {
	t.Helper()
	var apiErr *openai.Error
	require.True(t, errors.As(err, &apiErr), "%v", err)
	return apiErr
}

func TestVirtualKeys(t *testing.T) {
	t.Parallel()
	backup := fakeupstream.New("gpt-4o-mini")
	t.Cleanup(backup.Close)
	g := start(t, keysYAML, withYAML("  backup:\n    type: openai\n    base_url: "+backup.URL+"\n"+
		"virtual_models:\n  - source: chain\n    targets: [{model: up/gpt-4o}, {model: backup/gpt-4o-mini}]\n"+
		"  - source: other-chain\n    targets: [{model: up/gpt-4o}]\n"))

	// Made through grpcurl, the secret shown once.
	id, secret := createKey(t, g, `{"name":"billing","models":["up/gpt-4o","chain"],"limits":{"rpm":100}}`)
	require.True(t, strings.HasPrefix(id, "key_"))
	c := sdk(g, secret)

	t.Run("calls an allowed model, by provider/model, bare name and virtual model", func(t *testing.T) {
		for _, model := range []string{"up/gpt-4o", "gpt-4o", "chain"} {
			p := userMsg("hi")
			p.Model = model
			_, err := c.Chat.Completions.New(context.Background(), p)
			require.NoError(t, err, model)
		}
	})
	t.Run("a model outside the allowlist is 403, known or not", func(t *testing.T) {
		before := g.up.Count() + backup.Count()
		for _, model := range []string{"up/gpt-4o-mini", "backup/gpt-4o-mini", "other-chain", "no-such-model"} {
			p := userMsg("hi")
			p.Model = model
			_, err := c.Chat.Completions.New(context.Background(), p)
			e := sdkError(t, err)
			require.Equal(t, http.StatusForbidden, e.StatusCode, model)
			require.Equal(t, "model_not_allowed", e.Code, model)
			require.Equal(t, "model", e.Param)
		}
		// Streams too.
		p := userMsg("hi")
		p.Model = "up/gpt-4o-mini"
		st := c.Chat.Completions.NewStreaming(context.Background(), p)
		require.False(t, st.Next())
		require.Equal(t, http.StatusForbidden, sdkError(t, st.Err()).StatusCode)
		require.Equal(t, before, g.up.Count()+backup.Count(), "no upstream call for a refused model")
	})
	t.Run("gRPC: Bearer in metadata, PermissionDenied outside the allowlist", func(t *testing.T) {
		client := pb.NewChatServiceClient(g.conn)
		ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+secret)
		_, err := client.CreateChatCompletion(ctx, &pb.ChatCompletionRequest{Model: "up/gpt-4o",
			Messages: []*pb.ChatMessage{{Role: "user", Content: structpb.NewStringValue("hi")}}})
		require.NoError(t, err)
		_, err = client.CreateChatCompletion(ctx, &pb.ChatCompletionRequest{Model: "up/gpt-4o-mini",
			Messages: []*pb.ChatMessage{{Role: "user", Content: structpb.NewStringValue("hi")}}})
		require.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)
		s, err := client.StreamChatCompletion(ctx, &pb.ChatCompletionRequest{Model: "up/gpt-4o-mini",
			Messages: []*pb.ChatMessage{{Role: "user", Content: structpb.NewStringValue("hi")}}})
		require.NoError(t, err)
		_, err = s.Recv()
		require.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)
	})
	t.Run("/v1/models lists only what the key may use", func(t *testing.T) {
		page, err := c.Models.List(context.Background())
		require.NoError(t, err)
		var ids []string
		for _, m := range page.Data {
			ids = append(ids, m.ID)
		}
		require.ElementsMatch(t, []string{"up/gpt-4o", "chain"}, ids)
		_, err = c.Models.Get(context.Background(), "up/gpt-4o-mini")
		require.Equal(t, http.StatusForbidden, sdkError(t, err).StatusCode)
		all, err := sdk(g, "sk-master").Models.List(context.Background())
		require.NoError(t, err)
		require.Len(t, all.Data, 5, "the master key is unrestricted")
	})
	t.Run("the request line, never the secret, names the key", func(t *testing.T) {
		logs := g.logs.String()
		require.Contains(t, logs, `"key":"`+id+`"`)
		require.NotContains(t, logs, secret)
	})
	t.Run("a virtual key is no admin key", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+g.app.HTTPAddr()+"/admin/v1/keys", nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
	})
	t.Run("made, listed, changed and revoked over REST", func(t *testing.T) {
		code, out := adminREST(t, g, http.MethodPost, "/admin/v1/keys", `{"name":"search","models":["*"],"expires_at":"2999-01-01T00:00:00Z"}`)
		require.Equal(t, http.StatusOK, code, "%v", out)
		secret2 := out["secret"].(string)
		id2 := out["key"].(map[string]any)["id"].(string)
		require.Equal(t, "2999-01-01T00:00:00Z", out["key"].(map[string]any)["expires_at"])
		p := userMsg("hi")
		p.Model = "backup/gpt-4o-mini"
		_, err := sdk(g, secret2).Chat.Completions.New(context.Background(), p)
		require.NoError(t, err, `"*" allows every model`)

		code, list := adminREST(t, g, http.MethodGet, "/admin/v1/keys", "")
		require.Equal(t, http.StatusOK, code)
		raw, _ := json.Marshal(list)
		require.NotContains(t, string(raw), secret2)
		require.NotContains(t, string(raw), "sha256")
		require.Len(t, list["keys"], 2)
		require.Equal(t, "billing", list["keys"].([]any)[0].(map[string]any)["name"])
		require.Equal(t, secret[:12], list["keys"].([]any)[0].(map[string]any)["prefix"])

		code, got := adminREST(t, g, http.MethodGet, "/admin/v1/keys/"+id, "")
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, map[string]any{"rpm": float64(100)}, got["key"].(map[string]any)["limits"])

		// Changed: the first key may now use gpt-4o-mini on any provider.
		code, got = adminREST(t, g, http.MethodPatch, "/admin/v1/keys/"+id, `{"models":["up/gpt-4o","gpt-4o-mini"]}`)
		require.Equal(t, http.StatusOK, code, "%v", got)
		require.Equal(t, "billing", got["key"].(map[string]any)["name"], "what the update leaves out stays")
		p.Model = "up/gpt-4o-mini"
		_, err = c.Chat.Completions.New(context.Background(), p)
		require.NoError(t, err)

		code, _ = adminREST(t, g, http.MethodDelete, "/admin/v1/keys/"+id2, "")
		require.Equal(t, http.StatusOK, code)
		_, err = sdk(g, secret2).Chat.Completions.New(context.Background(), p)
		e := sdkError(t, err)
		require.Equal(t, http.StatusUnauthorized, e.StatusCode)
		require.Contains(t, e.Message, "revoked")
		code, got = adminREST(t, g, http.MethodGet, "/admin/v1/keys/"+id2, "")
		require.Equal(t, http.StatusOK, code)
		require.NotEmpty(t, got["key"].(map[string]any)["revoked_at"], "a revoked key stays listed")

		code, got = adminREST(t, g, http.MethodGet, "/admin/v1/keys/key_nope", "")
		require.Equal(t, http.StatusNotFound, code, "%v", got)
		code, got = adminREST(t, g, http.MethodPost, "/admin/v1/keys", `{"name":"x"}`)
		require.Equal(t, http.StatusBadRequest, code)
		require.Equal(t, "models", got["error"].(map[string]any)["param"])
	})
	t.Run("changes are audited with who and the key id", func(t *testing.T) {
		logs := g.logs.String()
		for _, action := range []string{"create key", "update key", "revoke key"} {
			line := lineWith(logs, `"action":"`+action+`"`)
			require.Contains(t, line, `"who":"admin:`, action)
			require.Contains(t, line, `"key_id":"key_`, action)
		}
		require.Contains(t, lineWith(logs, `"action":"update key"`), `"key_id":"`+id+`"`)
	})
}

// A key made in one run works in the next: the store in data_dir keeps it.
func TestVirtualKeysSurviveARestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	g := start(t, keysYAML+"  data_dir: "+dir+"\n")
	_, secret := createKey(t, g, `{"name":"svc","models":["*"]}`)
	require.NoError(t, g.app.Shutdown(context.Background()))
	g2 := start(t, keysYAML+"  data_dir: "+dir+"\n")
	_, err := sdk(g2, secret).Chat.Completions.New(context.Background(), userMsg("hi"))
	require.NoError(t, err)
	_, err = sdk(g2, secret+"x").Chat.Completions.New(context.Background(), userMsg("hi"))
	require.Equal(t, http.StatusUnauthorized, sdkError(t, err).StatusCode)
}

// lineWith is the first log line containing s.
func lineWith(logs, s string) string {
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, s) {
			return line
		}
	}
	return ""
}

// Requests per key id are counted, unless server.key_metrics is false.
func TestKeyMetrics(t *testing.T) {
	t.Parallel()
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[on], func(t *testing.T) {
			t.Parallel()
			yaml := keysYAML
			if !on {
				yaml += "  key_metrics: false\n"
			}
			g := start(t, yaml)
			id, secret := createKey(t, g, `{"name":"svc","models":["up/gpt-4o"],"limits":{"rpm":1}}`)
			c := sdk(g, secret)
			_, err := c.Chat.Completions.New(context.Background(), userMsg("hi"))
			require.NoError(t, err)
			_, err = c.Chat.Completions.New(context.Background(), userMsg("hi"))
			require.Equal(t, http.StatusTooManyRequests, sdkError(t, err).StatusCode)
			code, body := get(t, "http://"+g.app.HTTPAddr()+"/metrics")
			require.Equal(t, http.StatusOK, code)
			ok := `switchyard_key_requests_total{key="` + id + `",status_class="2xx"} 1`
			limited := `switchyard_key_rate_limited_total{key="` + id + `",limit="requests"} 1`
			if on {
				require.Contains(t, body, ok)
				require.Contains(t, body, limited)
				require.Contains(t, body, `switchyard_key_requests_total{key="`+id+`",status_class="4xx"} 1`)
			} else {
				require.NotContains(t, body, "switchyard_key_")
			}
		})
	}
}

// Anthropic's clients send the key as x-api-key: a virtual key works there, with
// its allowlist.
func TestVirtualKeyOnTheMessagesSurface(t *testing.T) {
	t.Parallel()
	g := start(t, keysYAML)
	_, secret := createKey(t, g, `{"name":"claude-code","models":["up/gpt-4o"]}`)
	ask := func(model string) (int, string) {
		req, err := http.NewRequest(http.MethodPost, "http://"+g.app.HTTPAddr()+"/v1/messages",
			strings.NewReader(`{"model":"`+model+`","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`))
		require.NoError(t, err)
		req.Header.Set("x-api-key", secret)
		req.Header.Set("anthropic-version", "2023-06-01")
		req.Header.Set("content-type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = io.Copy(&b, resp.Body)
		return resp.StatusCode, b.String()
	}
	code, body := ask("up/gpt-4o")
	require.Equal(t, http.StatusOK, code, body)
	code, body = ask("up/gpt-4o-mini")
	require.Equal(t, http.StatusForbidden, code, body)
	require.Contains(t, body, `"type":"error"`)
	require.Contains(t, body, "not allowed to use the model")
	require.Equal(t, 1, g.up.Count(), "the refused model reached no upstream")
}

// A key's tpm gets a call's estimate back when the call used nothing: refused
// before any upstream (an unknown model) or answered with an upstream's error
// status, which is not billed. Before, the whole estimate (the prompt and
// max_tokens) stayed charged for a minute, and the next small call was a 429.
func TestAFailedCallGivesItsTokenEstimateBack(t *testing.T) {
	t.Parallel()
	g := start(t, keysYAML)
	_, secret := createKey(t, g, `{"name":"tpm","models":["*"],"limits":{"tpm":1000}}`)
	call := func(model string, maxTokens int) int {
		resp := post(t, g.base+"/chat/completions", fmt.Sprintf(`{"model":%q,"max_tokens":%d,"messages":[{"role":"user","content":"hi"}]}`, model, maxTokens),
			"Authorization", "Bearer "+secret)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusNotFound, call("nosuchmodel", 990), "refused before any upstream")
	require.Equal(t, http.StatusOK, call("up/gpt-4o", 10), "its estimate came back")
	g.up.Script(fakeupstream.Reply{Status: http.StatusBadRequest, Body: `{"error":{"message":"bad","type":"invalid_request_error","param":"max_tokens"}}`})
	require.Equal(t, http.StatusBadRequest, call("up/gpt-4o", 900), "the upstream's error")
	require.Equal(t, http.StatusOK, call("up/gpt-4o", 10), "an error status is not billed: its estimate came back")
}
