package config

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
)

// hostedAPIs are the upstream hosts that refuse every call without a key.
var hostedAPIs = map[string]string{
	"api.openai.com": "OPENAI_API_KEY", "openrouter.ai": "OPENROUTER_API_KEY", "api.groq.com": "GROQ_API_KEY",
	"api.x.ai": "XAI_API_KEY", "api.anthropic.com": "ANTHROPIC_API_KEY",
}

// Warnings are settings that load but cannot work as written, one sentence each,
// naming the provider or variable: a provider that calls a hosted API without a
// key (it would list no models and every call would get 401), one that calls
// Switchyard itself, Azure variables no provider uses. Start logs them.
func (c *Config) Warnings() []string {
	var out []string
	for _, name := range c.providerNames() {
		p := c.Providers[name]
		if p == nil || p.APIKey != "" || p.BearerToken != "" || hasAuthHeader(p.Headers) {
			continue
		}
		u, err := url.Parse(p.BaseURL)
		if err != nil {
			continue
		}
		if envVar, hosted := hostedAPIs[strings.ToLower(u.Hostname())]; hosted {
			out = append(out, fmt.Sprintf("provider %q has no API key: %s refuses every call without one (401) and lists no models; "+
				"set providers.%s.api_key (e.g. api_key: ${%s}) or point base_url at a server that needs no key",
				name, p.BaseURL, name, envVar))
		}
	}
	return append(append(out, c.selfCalls()...), c.envWarnings...)
}

// azureAlone warns of AZURE_OPENAI_API_KEY or AZURE_OPENAI_ENDPOINT set with no
// type azure provider: unlike OPENAI_API_KEY they add none by themselves (Azure
// also needs the resource's endpoint and the deployments to serve), and would
// otherwise be ignored without a word.
func azureAlone(providers map[string]*Provider, get func(string) string) []string {
	for _, p := range providers {
		if p != nil && p.Type == "azure" {
			return nil
		}
	}
	var set []string
	for _, v := range []string{"AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT"} {
		if val := get(v); val != "" && !usedBy(providers, val) {
			set = append(set, v)
		}
	}
	if len(set) == 0 {
		return nil
	}
	what := strings.Join(set, " and ") + " is set, but no provider uses it"
	if len(set) == 2 {
		what = strings.Join(set, " and ") + " are set, but no provider uses them"
	}
	return []string{what + ": Azure OpenAI needs a type azure provider in a config file (--config) with base_url " +
		"(the resource's endpoint, e.g. ${AZURE_OPENAI_ENDPOINT}), api_key: ${AZURE_OPENAI_API_KEY} and deployments " +
		"(the models it serves)"}
}

// usedBy reports whether a provider's key, token, a header or its base URL is val: a variable the
// config file named (${AZURE_OPENAI_API_KEY} in a type openai provider for
// Azure's /openai/v1 API, say).
func usedBy(providers map[string]*Provider, val string) bool {
	for _, p := range providers {
		if p != nil && (string(p.APIKey) == val || string(p.BearerToken) == val || slices.Contains(slices.Collect(maps.Values(p.Headers)), val) || strings.TrimSuffix(p.BaseURL, "/") == strings.TrimSuffix(val, "/") ||
			strings.HasPrefix(p.BaseURL, strings.TrimSuffix(val, "/")+"/")) {
			return true
		}
	}
	return false
}

func hasAuthHeader(h map[string]string) bool {
	for k, v := range h {
		switch strings.ToLower(k) {
		case "authorization", "api-key", "x-api-key":
			if v != "" {
				return true
			}
		}
	}
	return false
}
