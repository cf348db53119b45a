package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/fakeupstream"
)

const azureE2EKey = "azure-e2e-key-0123456789"

// azureFilters is a content_filter_results member as Azure sends it.
const azureFilters = `{"hate":{"filtered":false,"severity":"safe"},"self_harm":{"filtered":false,"severity":"safe"},"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"safe"}}`

// startAzure runs Switchyard with provider "up" (OpenAI-compatible) and provider
// "az" (type azure) in front of a fake Azure resource whose deployment
// my-gpt4o serves gpt-4o, plus extra YAML after the providers.
func startAzure(t *testing.T, extra string) (*gateway, *fakeupstream.Azure) {
	t.Helper()
	az := fakeupstream.NewAzure(azureE2EKey, "", "my-gpt4o")
	t.Cleanup(az.Close)
	g := start(t, "", withYAML("  az:\n    type: azure\n    base_url: "+az.URL+"\n    api_key: "+azureE2EKey+"\n"+
		"    deployments: {gpt-4o: my-gpt4o}\n"+extra))
	return g, az
}

// TestAzureWithTheGoSDK: the OpenAI Go SDK calls an Azure deployment through
// Switchyard: the deployment's URL with its api-version and api-key, Azure's
// content-filter members back unchanged, non-stream and stream; the deployment's
// model is listed.
func TestAzureWithTheGoSDK(t *testing.T) {
	t.Parallel()
	g, az := startAzure(t, "")
	c := sdk(g, "k")

	page, err := c.Models.List(context.Background())
	require.NoError(t, err)
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	require.Contains(t, ids, "az/gpt-4o", "the deployments' models are the provider's models")

	az.Script(fakeupstream.Reply{Body: `{"id":"chatcmpl-az","object":"chat.completion","created":1,"model":"gpt-4o-2024-11-20",` +
		`"prompt_filter_results":[{"prompt_index":0,"content_filter_results":` + azureFilters + `}],` +
		`"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Hello from Azure!"},"content_filter_results":` + azureFilters + `}],` +
		`"usage":{"prompt_tokens":1,"completion_tokens":3,"total_tokens":4}}`})
	p := userMsg("hi")
	p.Model = "az/gpt-4o"
	resp, err := c.Chat.Completions.New(context.Background(), p)
	require.NoError(t, err)
	require.Equal(t, "Hello from Azure!", resp.Choices[0].Message.Content)
	var extra struct {
		Prompt  json.RawMessage `json:"prompt_filter_results"`
		Choices []struct {
			Filters json.RawMessage `json:"content_filter_results"`
		} `json:"choices"`
	}
	require.NoError(t, json.Unmarshal([]byte(resp.RawJSON()), &extra))
	require.JSONEq(t, `[{"prompt_index":0,"content_filter_results":`+azureFilters+`}]`, string(extra.Prompt))
	require.JSONEq(t, azureFilters, string(extra.Choices[0].Filters))

	reqs := az.AzureRequests()
	require.Len(t, reqs, 1)
	require.Equal(t, "/openai/deployments/my-gpt4o/chat/completions", reqs[0].Path)
	require.Equal(t, url.Values{"api-version": {"2024-10-21"}}, reqs[0].Query)
	require.Equal(t, azureE2EKey, reqs[0].Header.Get("api-key"))
	require.Empty(t, reqs[0].Header.Get("Authorization"))

	// Azure's stream: a first chunk without choices carrying the prompt's
	// filter results, then content chunks with their own.
	az.Script(fakeupstream.Reply{Events: []string{
		`{"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":` + azureFilters + `}]}`,
		`{"choices":[{"content_filter_results":{},"delta":{"content":"","role":"assistant"},"finish_reason":null,"index":0}],"created":1,"id":"chatcmpl-az","model":"gpt-4o-2024-11-20","object":"chat.completion.chunk"}`,
		`{"choices":[{"content_filter_results":` + azureFilters + `,"delta":{"content":"Hello from Azure!"},"finish_reason":null,"index":0}],"created":1,"id":"chatcmpl-az","model":"gpt-4o-2024-11-20","object":"chat.completion.chunk"}`,
		`{"choices":[{"content_filter_results":{},"delta":{},"finish_reason":"stop","index":0}],"created":1,"id":"chatcmpl-az","model":"gpt-4o-2024-11-20","object":"chat.completion.chunk"}`,
		`[DONE]`,
	}})
	s := c.Chat.Completions.NewStreaming(context.Background(), p)
	var text string
	var prompt, filters []string
	for s.Next() {
		ch := s.Current()
		if len(ch.Choices) > 0 {
			text += ch.Choices[0].Delta.Content
		}
		var extra struct {
			Prompt  json.RawMessage `json:"prompt_filter_results"`
			Choices []struct {
				Filters json.RawMessage `json:"content_filter_results"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal([]byte(ch.RawJSON()), &extra))
		if extra.Prompt != nil {
			prompt = append(prompt, string(extra.Prompt))
		}
		for _, c := range extra.Choices {
			filters = append(filters, string(c.Filters))
		}
	}
	require.NoError(t, s.Err())
	require.Equal(t, "Hello from Azure!", text)
	require.Len(t, prompt, 1)
	require.JSONEq(t, `[{"prompt_index":0,"content_filter_results":`+azureFilters+`}]`, prompt[0])
	require.Contains(t, filters, azureFilters)
	reqs = az.AzureRequests()
	require.Len(t, reqs, 2)
	require.Equal(t, "/openai/deployments/my-gpt4o/chat/completions", reqs[1].Path)
	require.Equal(t, true, fakeupstream.Request{Body: reqs[1].Body}.JSON()["stream"])
}

// TestAzureContentFilterDoesNotFailOver: a prompt Azure's content filter
// rejects (400, code content_filter) is the client's answer: not retried, not
// failed over to the chain's next target, non-stream and stream; the same
// chain does fail over when Azure is unavailable (503).
func TestAzureContentFilterDoesNotFailOver(t *testing.T) {
	t.Parallel()
	g, az := startAzure(t, "resilience:\n  retry:\n    max_retries: 1\n    initial_backoff: 1ms\n"+
		"virtual_models:\n  - source: chain\n    strategy: failover\n    targets:\n"+
		"      - model: az/gpt-4o\n      - model: up/gpt-4o\n")
	c := sdk(g, "k")
	p := userMsg("something the filter rejects")
	p.Model = "chain"

	for i, stream := range []bool{false, true} {
		az.Script(fakeupstream.Reply{Status: 400, Body: fakeupstream.AzureContentFilterError})
		var err error
		if stream {
			s := c.Chat.Completions.NewStreaming(context.Background(), p)
			for s.Next() {
			}
			err = s.Err()
		} else {
			_, err = c.Chat.Completions.New(context.Background(), p)
		}
		var apiErr *openai.Error
		require.True(t, errors.As(err, &apiErr), "stream %v: %v", stream, err)
		require.Equal(t, 400, apiErr.StatusCode)
		require.Equal(t, "content_filter", apiErr.Code)
		require.Equal(t, "prompt", apiErr.Param)
		require.Contains(t, apiErr.Message, "content management policy")
		require.Len(t, az.AzureRequests(), i+1, "stream %v: not retried", stream)
		require.Zero(t, g.up.Count(), "stream %v: not failed over", stream)
	}

	az.SetDefault(fakeupstream.Reply{Status: 503})
	resp, err := c.Chat.Completions.New(context.Background(), p)
	require.NoError(t, err)
	require.Equal(t, "Hello from the fake upstream!", resp.Choices[0].Message.Content)
	require.Equal(t, 1, g.up.Count(), "a 503 fails over")
}

// TestAzureV1APIWithATokenE2E: a base_url ending in /openai/v1 uses Azure's v1
// API (OpenAI's paths, the deployment as the body's model) and bearer_token
// goes as Authorization: Bearer.
func TestAzureV1APIWithATokenE2E(t *testing.T) {
	t.Parallel()
	az := fakeupstream.NewAzure("", "entra-token-0123456789")
	t.Cleanup(az.Close)
	g := start(t, "", withYAML("  az:\n    type: azure\n    base_url: "+az.URL+"/openai/v1\n    bearer_token: entra-token-0123456789\n"+
		"    deployments: {gpt-4o: my-gpt4o}\n"))
	p := userMsg("hi")
	p.Model = "az/gpt-4o"
	_, err := sdk(g, "k").Chat.Completions.New(context.Background(), p)
	require.NoError(t, err)
	reqs := az.AzureRequests()
	require.Len(t, reqs, 1)
	require.Equal(t, "/openai/v1/chat/completions", reqs[0].Path)
	require.Empty(t, reqs[0].Query)
	require.Equal(t, "Bearer entra-token-0123456789", reqs[0].Header.Get("Authorization"))
	require.Empty(t, reqs[0].Header.Get("api-key"))
	require.Equal(t, "my-gpt4o", fakeupstream.Request{Body: reqs[0].Body}.JSON()["model"])
}

// TestAzureAndAnthropicChainsBothWays: one config with an azure and an
// anthropic provider; a chain from the Azure deployment to Claude fails over
// when Azure is unavailable (503), and a chain from Claude to Azure when
// Anthropic is overloaded (529), through the OpenAI Go SDK, stream and not.
func TestAzureAndAnthropicChainsBothWays(t *testing.T) {
	t.Parallel()
	ant := fakeupstream.NewAnthropic()
	t.Cleanup(ant.Close)
	g, az := startAzure(t, "  claude:\n    type: anthropic\n    base_url: "+ant.URL+"\n    api_key: sk-ant-chain-0123456789\n"+
		"resilience:\n  retry:\n    max_retries: 0\n"+
		"virtual_models:\n"+
		"  - source: gpt-then-claude\n    targets:\n      - model: az/gpt-4o\n      - model: claude/claude-sonnet-4-20250514\n"+
		"  - source: claude-then-gpt\n    targets:\n      - model: claude/claude-sonnet-4-20250514\n      - model: az/gpt-4o\n")
	az.SetDefault(fakeupstream.Reply{Text: "Hello from Azure!"})
	ant.SetDefault(fakeupstream.Reply{Text: "Hello from Claude!"})
	c := sdk(g, "k")
	cases := []struct {
		name, model, want string
		fail              func()
	}{
		{"Azure 503 fails over to Claude", "gpt-then-claude", "Hello from Claude!", func() { az.Script(fakeupstream.Reply{Status: 503}) }},
		{"Anthropic 529 fails over to Azure", "claude-then-gpt", "Hello from Azure!", func() { ant.Script(fakeupstream.Reply{Status: 529}) }},
	}
	for _, tc := range cases { // one after another: the counts below add up both
		t.Run(tc.name, func(t *testing.T) {
			for _, stream := range []bool{false, true} {
				tc.fail()
				p := userMsg("hi")
				p.Model = tc.model
				var text string
				if stream {
					s := c.Chat.Completions.NewStreaming(context.Background(), p)
					for s.Next() {
						for _, ch := range s.Current().Choices {
							text += ch.Delta.Content
						}
					}
					require.NoError(t, s.Err(), "%s stream", tc.model)
				} else {
					resp, err := c.Chat.Completions.New(context.Background(), p)
					require.NoError(t, err, tc.model)
					text = resp.Choices[0].Message.Content
				}
				require.Equal(t, tc.want, text, "%s stream=%v", tc.model, stream)
			}
		})
	}
	require.Len(t, az.AzureRequests(), 2+2, "Azure: two failures, two answers")
	require.Equal(t, 2+2, ant.Count(), "Anthropic: two answers, two failures")
}
