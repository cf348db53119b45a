package config

import (
	"fmt"
	"net/url"
	"strings"
)

// hostedAPIs are the upstream hosts that refuse every call without a key.
var hostedAPIs = map[string]string{
	"api.openai.com": "OPENAI_API_KEY", "openrouter.ai": "OPENROUTER_API_KEY", "api.groq.com": "GROQ_API_KEY",
	"api.x.ai": "XAI_API_KEY", "api.anthropic.com": "ANTHROPIC_API_KEY",
}

// Warnings are settings that load but cannot work as written, one sentence each,
// naming the provider: today, a provider that calls a hosted API without a key
// (it would list no models and every call would get 401). Start logs them.
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
	return append(out, c.selfCalls()...)
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
