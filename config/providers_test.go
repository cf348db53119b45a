package config_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/config"
)

// TestProviderTypeDefaults: anthropic and azure are supported types, each with
// the defaults of its own settings.
func TestProviderTypeDefaults(t *testing.T) {
	t.Parallel()
	require.True(t, config.ProviderTypes["anthropic"])
	require.True(t, config.ProviderTypes["azure"])
	cases := []struct {
		name, yaml string
		env        map[string]string
		want       config.Provider
	}{
		{name: "anthropic", yaml: "providers:\n  c:\n    type: anthropic\n    api_key: k\n",
			want: config.Provider{BaseURL: "https://api.anthropic.com", DefaultMaxTokens: 4096}},
		{name: "anthropic default_max_tokens set", yaml: "providers:\n  c:\n    type: anthropic\n    api_key: k\n    default_max_tokens: 1024\n",
			want: config.Provider{BaseURL: "https://api.anthropic.com", DefaultMaxTokens: 1024}},
		{name: "ANTHROPIC_BASE_URL is an anthropic provider's default base_url",
			yaml: "providers:\n  c:\n    type: anthropic\n    api_key: k\n", env: map[string]string{"ANTHROPIC_BASE_URL": "http://127.0.0.1:1"},
			want: config.Provider{BaseURL: "http://127.0.0.1:1", DefaultMaxTokens: 4096}},
		{name: "a base_url in the file wins over ANTHROPIC_BASE_URL",
			yaml: "providers:\n  c:\n    type: anthropic\n    api_key: k\n    base_url: http://127.0.0.1:2\n",
			env:  map[string]string{"ANTHROPIC_BASE_URL": "http://127.0.0.1:1"},
			want: config.Provider{BaseURL: "http://127.0.0.1:2", DefaultMaxTokens: 4096}},
		{name: "azure", yaml: "providers:\n  c:\n    type: azure\n    api_key: k\n    base_url: https://r.openai.azure.com\n",
			want: config.Provider{BaseURL: "https://r.openai.azure.com", APIVersion: "2024-10-21"}},
		{name: "azure with everything set",
			yaml: "providers:\n  c:\n    type: azure\n    bearer_token: ${TOKEN}\n    base_url: https://r.openai.azure.com\n" +
				"    api_version: 2025-04-01-preview\n    deployments: {gpt-4o: my-gpt4o, gpt-4.1: g41.prod}\n",
			env: map[string]string{"TOKEN": "eyJ0"},
			want: config.Provider{BaseURL: "https://r.openai.azure.com", APIVersion: "2025-04-01-preview",
				Deployments: map[string]string{"gpt-4o": "my-gpt4o", "gpt-4.1": "g41.prod"}, BearerToken: "eyJ0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := config.Load(writeFile(t, tc.yaml), envOf(tc.env))
			require.NoError(t, err)
			p := cfg.Providers["c"]
			require.Equal(t, tc.want.BaseURL, p.BaseURL)
			require.Equal(t, tc.want.APIVersion, p.APIVersion)
			require.Equal(t, tc.want.DefaultMaxTokens, p.DefaultMaxTokens)
			require.Equal(t, tc.want.Deployments, p.Deployments)
			require.Equal(t, tc.want.BearerToken, p.BearerToken)
		})
	}
}

// TestAnthropicFromTheEnvironment: ANTHROPIC_API_KEY adds provider anthropic
// (at ANTHROPIC_BASE_URL when set), as OPENAI_API_KEY adds openai.
func TestAnthropicFromTheEnvironment(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		env  map[string]string
		base string
	}{
		{"key only", map[string]string{"ANTHROPIC_API_KEY": "sk-ant-1"}, "https://api.anthropic.com"},
		{"key and base URL", map[string]string{"ANTHROPIC_API_KEY": "sk-ant-1", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9/"}, "http://127.0.0.1:9/"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := config.Load("", envOf(tc.env))
			require.NoError(t, err)
			p := cfg.Providers["anthropic"]
			require.NotNil(t, p)
			require.Equal(t, "anthropic", p.Type)
			require.Equal(t, config.Secret("sk-ant-1"), p.APIKey)
			require.Equal(t, tc.base, p.BaseURL)
			require.Equal(t, 4096, p.DefaultMaxTokens)
			require.NotContains(t, cfg.Providers, config.SimulatorName)
		})
	}
	cfg, err := config.Load("", envOf(map[string]string{"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}))
	require.NoError(t, err)
	require.NotContains(t, cfg.Providers, "anthropic", "a base URL without a key adds nothing")
}

// TestProviderTypeSettingsMessages: the settings of one type are refused on
// another, and each is checked where it belongs, in the file's words.
func TestProviderTypeSettingsMessages(t *testing.T) {
	t.Parallel()
	const az = "providers:\n  a:\n    type: azure\n    base_url: https://r.openai.azure.com\n"
	runMessageCases(t, []messageCase{
		{name: "deployments on an openai provider", yaml: "providers:\n  a:\n    type: openai\n    deployments: {gpt-4o: d}\n",
			want: `providers.a.deployments (line 4): only type azure providers use deployments; this one is type "openai"`},
		{name: "api_version on an anthropic provider", yaml: "providers:\n  a:\n    type: anthropic\n    api_key: k\n    api_version: 2024-10-21\n",
			want: `providers.a.api_version (line 5): only type azure providers use api_version; this one is type "anthropic"`},
		{name: "bearer_token on an openai provider", yaml: "providers:\n  a:\n    type: openai\n    bearer_token: t\n",
			want: `providers.a.bearer_token (line 4): only type azure providers use bearer_token; this one is type "openai"`},
		{name: "default_max_tokens on an azure provider", yaml: az + "    api_key: k\n    default_max_tokens: 10\n",
			want: `providers.a.default_max_tokens (line 6): only type anthropic providers use default_max_tokens; this one is type "azure"`},
		{name: "negative default_max_tokens", yaml: "providers:\n  a:\n    type: anthropic\n    api_key: k\n    default_max_tokens: -1\n",
			want: `providers.a.default_max_tokens (line 5): must be at least 1; got -1`},
		{name: "azure without base_url", yaml: "providers:\n  a:\n    type: azure\n    api_key: k\n",
			want: `providers.a.base_url (line 2): type azure needs base_url: the resource's endpoint, such as ` +
				`https://my-resource.openai.azure.com (or https://my-resource.openai.azure.com/openai/v1 for the v1 API)`},
		{name: "azure base_url copied from a request",
			yaml: "providers:\n  a:\n    type: azure\n    api_key: k\n    base_url: https://r.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21\n",
			want: `providers.a.base_url (line 5): "https://r.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21" ` +
				`is a request's URL: write the resource's endpoint, https://r.openai.azure.com (the deployment goes in deployments:, the api-version in api_version)`},
		{name: "azure without a key", yaml: az + "    api_key: ${AZURE_OPENAI_API_KEY}\n",
			want: `providers.a.api_key (line 5): type azure needs api_key (sent as the api-key header, e.g. api_key: ${AZURE_OPENAI_API_KEY}) ` +
				`or bearer_token (a Microsoft Entra ID token); Azure refuses every call without one`},
		{name: "azure with key and token", yaml: az + "    api_key: k\n    bearer_token: t\n",
			want: `providers.a.bearer_token (line 6): set api_key (sent as the api-key header) or bearer_token (an Entra ID token), not both`},
		{name: "api_version not a version", yaml: az + "    api_key: k\n    api_version: v1\n",
			want: `providers.a.api_version (line 6): "v1" is not an Azure api-version: write a date such as 2024-10-21 (or one ending in -preview)`},
		{name: "empty deployment", yaml: az + "    api_key: k\n    deployments:\n      gpt-4o: \"\"\n",
			want: `providers.a.deployments.gpt-4o (line 7): name the deployment that serves gpt-4o (or leave it out: a model without an entry is its own deployment)`},
		{name: "deployment with a slash", yaml: az + "    api_key: k\n    deployments:\n      gpt-4o: a/b\n",
			want: `providers.a.deployments.gpt-4o (line 7): "a/b" is not a deployment name: letters, digits, '-', '_' and '.', starting with a letter or digit`},
		{name: "deployments not a block", yaml: az + "    api_key: k\n    deployments: [a]\n",
			want: `providers.a.deployments (line 6): expected a block of name: value pairs; got a list`},
		{name: "a header name with a space", yaml: "providers:\n  a:\n    type: openai\n    api_key: k\n    headers: {\"X Team\": a}\n",
			want: `providers.a.headers (line 5): "X Team" is not a header name (letters, digits and !#$%&'*+-.^_` + "`" + `|~, no spaces)`},
		{name: "a header value with a line break", yaml: "providers:\n  a:\n    type: openai\n    api_key: k\n    headers: {X-Team: \"a\\r\\nX-Evil: 1\"}\n",
			want: `providers.a.headers.X-Team (line 5): the value has a control character (a line break, say), which no request may carry`},
		{name: "ANTHROPIC_BASE_URL not a URL", yaml: "providers:\n  a:\n    type: anthropic\n    api_key: k\n",
			env:  map[string]string{"ANTHROPIC_BASE_URL": "api.anthropic.com"},
			want: `providers.a.base_url (from ANTHROPIC_BASE_URL): "api.anthropic.com" is not an http(s) URL`},
	})
}

// TestAzureKeyInAHeaderIsAKey: an api-key written as a header satisfies Azure.
func TestAzureKeyInAHeaderIsAKey(t *testing.T) {
	t.Parallel()
	_, err := config.Load(writeFile(t, "providers:\n  a:\n    type: azure\n    base_url: https://r.openai.azure.com\n    headers: {api-key: k}\n"), envOf(nil))
	require.NoError(t, err)
}

// TestSelfCallWarning: a provider whose base_url is Switchyard's own REST
// address (ANTHROPIC_BASE_URL exported for Claude Code, say) is named at start.
func TestSelfCallWarning(t *testing.T) {
	t.Parallel()
	const loop = `provider "anthropic" calls Switchyard itself: its base_url http://localhost:8080 is this server's http_addr %s, ` +
		`so every request would loop back here; point it at the upstream (an ANTHROPIC_BASE_URL or OPENAI_BASE_URL meant for a client?)`
	cases := []struct {
		name, addr, base string
		want             []string
	}{
		{"default address, localhost", "", "http://localhost:8080", []string{fmt.Sprintf(loop, "127.0.0.1:8080")}},
		{"all interfaces", "0.0.0.0:8080", "http://localhost:8080", []string{fmt.Sprintf(loop, "0.0.0.0:8080")}},
		{"the same IP", "127.0.0.1:8080", "http://127.0.0.1:8080", []string{strings.Replace(fmt.Sprintf(loop, "127.0.0.1:8080"), "localhost", "127.0.0.1", 1)}},
		{"another port", "127.0.0.1:8080", "http://localhost:8081", nil},
		{"another host", "127.0.0.1:8080", "https://api.example.com:8080", nil},
		{"a random port", "127.0.0.1:0", "http://localhost:0", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			yaml := "providers:\n  other:\n    type: openai\n    base_url: https://api.example.com/v1\n    api_key: k\n"
			if tc.addr != "" {
				yaml = "server:\n  http_addr: \"" + tc.addr + "\"\n" + yaml
			}
			cfg, err := config.Load(writeFile(t, yaml), envOf(map[string]string{"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": tc.base}))
			require.NoError(t, err)
			require.Equal(t, tc.want, cfg.Warnings())
		})
	}
}

// TestAzureEnvironmentAloneIsNamed: AZURE_OPENAI_API_KEY (or _ENDPOINT) adds no
// provider by itself; set with no type azure provider, a warning says what is
// missing instead of ignoring it.
func TestAzureEnvironmentAloneIsNamed(t *testing.T) {
	t.Parallel()
	const needs = ": Azure OpenAI needs a type azure provider in a config file (--config) with base_url " +
		"(the resource's endpoint, e.g. ${AZURE_OPENAI_ENDPOINT}), api_key: ${AZURE_OPENAI_API_KEY} and deployments (the models it serves)"
	const azure = "providers:\n  az:\n    type: azure\n    base_url: https://r.openai.azure.com\n    api_key: ${AZURE_OPENAI_API_KEY}\n"
	cases := []struct {
		name, yaml string
		env        map[string]string
		want       []string
	}{
		{name: "key alone", env: map[string]string{"AZURE_OPENAI_API_KEY": "k"},
			want: []string{"AZURE_OPENAI_API_KEY is set, but no provider uses it" + needs}},
		{name: "key and endpoint", env: map[string]string{"AZURE_OPENAI_API_KEY": "k", "AZURE_OPENAI_ENDPOINT": "https://r.openai.azure.com"},
			want: []string{"AZURE_OPENAI_API_KEY and AZURE_OPENAI_ENDPOINT are set, but no provider uses them" + needs}},
		{name: "beside another provider", env: map[string]string{"AZURE_OPENAI_API_KEY": "k", "OPENAI_API_KEY": "sk"},
			want: []string{"AZURE_OPENAI_API_KEY is set, but no provider uses it" + needs}},
		{name: "an azure provider uses it", yaml: azure, env: map[string]string{"AZURE_OPENAI_API_KEY": "k"}},
		{name: "a type openai provider sends the key in a header",
			yaml: "providers:\n  az:\n    type: openai\n    base_url: https://r.openai.azure.com/openai/v1\n    headers: {api-key: ${AZURE_OPENAI_API_KEY}}\n",
			env:  map[string]string{"AZURE_OPENAI_API_KEY": "k"}},
		{name: "a type openai provider uses them (Azure's /openai/v1 API)",
			yaml: "providers:\n  az:\n    type: openai\n    base_url: ${AZURE_OPENAI_ENDPOINT}/openai/v1\n    api_key: ${AZURE_OPENAI_API_KEY}\n",
			env:  map[string]string{"AZURE_OPENAI_API_KEY": "k", "AZURE_OPENAI_ENDPOINT": "https://r.openai.azure.com"}},
		{name: "not set", env: map[string]string{"OPENAI_API_KEY": "sk"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := ""
			if tc.yaml != "" {
				path = writeFile(t, tc.yaml)
			}
			cfg, err := config.Load(path, envOf(tc.env))
			require.NoError(t, err)
			require.Equal(t, tc.want, cfg.Warnings())
		})
	}
}
