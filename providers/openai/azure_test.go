package openai_test

import (
	"context"
	"encoding/json"
	"io"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/fakeupstream"
	"github.com/switchyard/switchyard/openaijson"
	"github.com/switchyard/switchyard/providers/openai"
)

const (
	azureKey   = "azure-key-0123456789"
	azureToken = "entra-token-0123456789"
)

func azureClient(t *testing.T, base, key string, az *openai.Azure) *openai.Client {
	t.Helper()
	c := openai.New(openai.Config{Name: "az", BaseURL: base, APIKey: key, Azure: az, ConnectTimeout: time.Second,
		Timeout: 5 * time.Second})
	t.Cleanup(c.Close)
	return c
}

// TestAzureURLsAndHeaders checks what an Azure provider sends, exactly: the
// deployment API's path and api-version, or the v1 API's plain path with the
// deployment as the body's model; the api-key header or the bearer token, and
// never the OpenAI-style bearer key.
func TestAzureURLsAndHeaders(t *testing.T) {
	t.Parallel()
	deps := map[string]string{"gpt-4o": "my-gpt4o"}
	cases := []struct {
		name      string
		base      func(up *fakeupstream.Azure) string
		key       string
		az        openai.Azure
		model     string
		path      string
		version   string // "" = no api-version query at all
		bodyModel string
		apiKey    string
		auth      string
	}{
		{name: "deployment from the map, default api-version", base: root, key: azureKey, az: openai.Azure{Deployments: deps},
			model: "gpt-4o", path: "/openai/deployments/my-gpt4o/chat/completions", version: openai.DefaultAzureAPIVersion,
			bodyModel: "gpt-4o", apiKey: azureKey},
		{name: "a model without an entry is its own deployment", base: root, key: azureKey, az: openai.Azure{Deployments: deps},
			model: "gpt-4o-mini", path: "/openai/deployments/gpt-4o-mini/chat/completions", version: openai.DefaultAzureAPIVersion,
			bodyModel: "gpt-4o-mini", apiKey: azureKey},
		{name: "configured api-version", base: root, key: azureKey, az: openai.Azure{APIVersion: "2025-04-01-preview"},
			model: "gpt-4o", path: "/openai/deployments/gpt-4o/chat/completions", version: "2025-04-01-preview",
			bodyModel: "gpt-4o", apiKey: azureKey},
		{name: "base_url written with /openai/", base: func(up *fakeupstream.Azure) string { return up.URL + "/openai/" },
			key: azureKey, az: openai.Azure{}, model: "gpt-4o", path: "/openai/deployments/gpt-4o/chat/completions",
			version: openai.DefaultAzureAPIVersion, bodyModel: "gpt-4o", apiKey: azureKey},
		{name: "Entra ID bearer token", base: root, az: openai.Azure{BearerToken: azureToken, Deployments: deps},
			model: "gpt-4o", path: "/openai/deployments/my-gpt4o/chat/completions", version: openai.DefaultAzureAPIVersion,
			bodyModel: "gpt-4o", auth: "Bearer " + azureToken},
		{name: "v1 API: plain path, deployment as model, no api-version", base: v1, key: azureKey, az: openai.Azure{Deployments: deps},
			model: "gpt-4o", path: "/openai/v1/chat/completions", bodyModel: "my-gpt4o", apiKey: azureKey},
		{name: "v1 API with a token", base: func(up *fakeupstream.Azure) string { return up.URL + "/openai/v1/" },
			az: openai.Azure{BearerToken: azureToken}, model: "gpt-4o-mini", path: "/openai/v1/chat/completions",
			bodyModel: "gpt-4o-mini", auth: "Bearer " + azureToken},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, stream := range []bool{false, true} {
				up := fakeupstream.NewAzure(azureKey, azureToken)
				defer up.Close()
				az := tc.az
				c := azureClient(t, tc.base(up), tc.key, &az)
				req := request()
				req.Model = tc.model
				if stream {
					s, err := c.Stream(context.Background(), req)
					require.NoError(t, err)
					for {
						if _, err := s.Recv(); err != nil {
							require.ErrorIs(t, err, io.EOF)
							break
						}
					}
					require.NoError(t, s.Close())
				} else {
					_, err := c.Chat(context.Background(), req)
					require.NoError(t, err)
				}
				got := up.AzureRequests()
				require.Len(t, got, 1)
				r := got[0]
				require.Equal(t, tc.path, r.Path)
				want := url.Values{}
				if tc.version != "" {
					want.Set("api-version", tc.version)
				}
				require.Equal(t, want, r.Query)
				require.Equal(t, tc.apiKey, r.Header.Get("api-key"))
				require.Equal(t, tc.auth, r.Header.Get("Authorization"))
				require.Equal(t, tc.bodyModel, fakeupstream.Request{Body: r.Body}.JSON()["model"])
				require.Equal(t, stream, fakeupstream.Request{Body: r.Body}.JSON()["stream"])
			}
		})
	}
}

func root(up *fakeupstream.Azure) string { return up.URL }
func v1(up *fakeupstream.Azure) string   { return up.URL + "/openai/v1" }

// TestAzureModels: Azure lists no deployments, so the provider serves the
// models its deployments name, without asking.
func TestAzureModels(t *testing.T) {
	t.Parallel()
	up := fakeupstream.NewAzure(azureKey, "")
	defer up.Close()
	for _, base := range []string{root(up), v1(up)} {
		c := azureClient(t, base, azureKey, &openai.Azure{Deployments: map[string]string{"gpt-4o": "a", "gpt-4.1": "b"}})
		ids, err := c.Models(context.Background())
		require.NoError(t, err)
		require.Equal(t, []string{"gpt-4.1", "gpt-4o"}, ids)
		c = azureClient(t, base, azureKey, &openai.Azure{})
		ids, err = c.Models(context.Background())
		require.NoError(t, err)
		require.Empty(t, ids)
	}
	require.Empty(t, up.AzureRequests())
}

// TestAzureContentFilterResultsPassThrough: Azure's prompt_filter_results and
// content_filter_results are no OpenAI members, and reach the client as Azure
// sent them, non-stream and stream.
func TestAzureContentFilterResultsPassThrough(t *testing.T) {
	t.Parallel()
	up := fakeupstream.NewAzure(azureKey, "")
	defer up.Close()
	c := azureClient(t, up.URL, azureKey, &openai.Azure{})
	const filters = `{"hate":{"filtered":false,"severity":"safe"},"self_harm":{"filtered":false,"severity":"safe"},"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"safe"}}`
	up.Script(fakeupstream.Reply{Body: `{"id":"chatcmpl-az","object":"chat.completion","created":1,"model":"gpt-4o-2024-11-20",` +
		`"prompt_filter_results":[{"prompt_index":0,"content_filter_results":` + filters + `}],` +
		`"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hi"},"content_filter_results":` + filters + `}],` +
		`"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`})
	out, err := c.Chat(context.Background(), request())
	require.NoError(t, err)
	var got struct {
		Prompt  json.RawMessage `json:"prompt_filter_results"`
		Choices []struct {
			Filters json.RawMessage `json:"content_filter_results"`
		} `json:"choices"`
	}
	require.NoError(t, json.Unmarshal(openaijson.Marshal(out), &got))
	require.JSONEq(t, `[{"prompt_index":0,"content_filter_results":`+filters+`}]`, string(got.Prompt))
	require.JSONEq(t, filters, string(got.Choices[0].Filters))

	// Azure's stream opens with a chunk without choices that carries the prompt's
	// filter results, and every content chunk carries its own.
	up.Script(fakeupstream.Reply{Events: []string{
		`{"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":` + filters + `}]}`,
		`{"choices":[{"content_filter_results":{},"delta":{"content":"","role":"assistant"},"finish_reason":null,"index":0}],"created":1,"id":"chatcmpl-az","model":"gpt-4o-2024-11-20","object":"chat.completion.chunk"}`,
		`{"choices":[{"content_filter_results":` + filters + `,"delta":{"content":"hi"},"finish_reason":null,"index":0}],"created":1,"id":"chatcmpl-az","model":"gpt-4o-2024-11-20","object":"chat.completion.chunk"}`,
		`{"choices":[{"content_filter_results":{},"delta":{},"finish_reason":"stop","index":0}],"created":1,"id":"chatcmpl-az","model":"gpt-4o-2024-11-20","object":"chat.completion.chunk"}`,
		`[DONE]`,
	}})
	s, err := c.Stream(context.Background(), request())
	require.NoError(t, err)
	defer s.Close()
	var prompt, content []string
	for {
		ch, err := s.Recv()
		if err != nil {
			require.ErrorIs(t, err, io.EOF)
			break
		}
		var got struct {
			Prompt  json.RawMessage `json:"prompt_filter_results"`
			Choices []struct {
				Filters json.RawMessage `json:"content_filter_results"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal(openaijson.Marshal(ch), &got))
		if got.Prompt != nil {
			prompt = append(prompt, string(got.Prompt))
		}
		for _, c := range got.Choices {
			content = append(content, string(c.Filters))
		}
	}
	require.Len(t, prompt, 1)
	require.JSONEq(t, `[{"prompt_index":0,"content_filter_results":`+filters+`}]`, prompt[0])
	require.Len(t, content, 3)
	require.JSONEq(t, `{}`, content[0])
	require.JSONEq(t, filters, content[1])
	require.JSONEq(t, `{}`, content[2])
}

// TestAzureContentFilterErrorIsTheClients: a prompt Azure's filter rejects is a
// 400 with code content_filter, the upstream's message and param, not a failure
// of the provider.
func TestAzureContentFilterErrorIsTheClients(t *testing.T) {
	t.Parallel()
	up := fakeupstream.NewAzure(azureKey, "")
	defer up.Close()
	c := azureClient(t, up.URL, azureKey, &openai.Azure{})
	up.Script(fakeupstream.Reply{Status: 400, Body: fakeupstream.AzureContentFilterError})
	_, err := c.Chat(context.Background(), request())
	pe := providerError(t, err)
	require.Equal(t, 400, pe.Status)
	require.Equal(t, "content_filter", pe.Code)
	require.Equal(t, "prompt", pe.Param)
	require.Contains(t, pe.Message, "content management policy")
	require.Empty(t, pe.Kind)
}

// TestAzureSecretsRedacted: neither the api-key nor the bearer token leaves the
// process in an error, whatever the upstream echoes.
func TestAzureSecretsRedacted(t *testing.T) {
	t.Parallel()
	for _, auth := range []struct{ name, key, token string }{{"api-key", azureKey, ""}, {"bearer token", "", azureToken}} {
		t.Run(auth.name, func(t *testing.T) {
			t.Parallel()
			up := fakeupstream.NewAzure(azureKey, azureToken)
			defer up.Close()
			c := azureClient(t, up.URL, auth.key, &openai.Azure{BearerToken: auth.token})
			up.Script(fakeupstream.Reply{Status: 400, Body: `{"error":{"message":"bad key ` + azureKey + ` or token ` + azureToken +
				`","code":"` + azureToken + `","param":"` + azureKey + `"}}`})
			_, err := c.Chat(context.Background(), request())
			pe := providerError(t, err)
			for _, s := range []string{pe.Message, pe.Code, pe.Param, err.Error()} {
				if auth.key != "" {
					require.NotContains(t, s, azureKey)
				}
				if auth.token != "" {
					require.NotContains(t, s, azureToken)
				}
			}
		})
	}
}

// TestAzureRefusedKey: a wrong api-key is Azure's 401, which (as for any
// upstream) is Switchyard's credentials refused: 502, naming the provider.
func TestAzureRefusedKey(t *testing.T) {
	t.Parallel()
	up := fakeupstream.NewAzure(azureKey, "")
	defer up.Close()
	c := azureClient(t, up.URL, "wrong-key-0123456789", &openai.Azure{})
	_, err := c.Chat(context.Background(), request())
	pe := providerError(t, err)
	require.Equal(t, 502, pe.Status)
	require.Equal(t, 401, pe.Answered)
	require.Equal(t, "upstream_authentication_failed", pe.Code)
	require.Empty(t, up.AzureRequests())
}
