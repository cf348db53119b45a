package config

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// Defaults of the settings only some provider types use. The README's settings
// table is checked against these.
const (
	// DefaultAnthropicBaseURL is type anthropic's base_url (paths add /v1/...).
	DefaultAnthropicBaseURL = "https://api.anthropic.com"
	// DefaultAnthropicMaxTokens is type anthropic's default_max_tokens: Anthropic
	// requires max_tokens, OpenAI's clients often send none.
	DefaultAnthropicMaxTokens = 4096
	// DefaultAzureAPIVersion is type azure's api_version: the newest dated GA
	// (non-preview) version of Azure OpenAI's data plane. Later dated versions are
	// previews, changed or retired at short notice; newer features come through the
	// v1 API (base_url ending in /openai/v1), which takes no api-version.
	DefaultAzureAPIVersion = "2024-10-21"
)

// typeDefaults fills the settings only p's type uses.
func typeDefaults(p *Provider) {
	switch p.Type {
	case "azure":
		if p.APIVersion == "" {
			p.APIVersion = DefaultAzureAPIVersion
		}
	case "anthropic":
		if p.DefaultMaxTokens == 0 {
			p.DefaultMaxTokens = DefaultAnthropicMaxTokens
		}
	}
}

var (
	// azureVersion is an api-version as Azure writes them: a date, perhaps a
	// preview, or the v1 API's "preview" and "latest".
	azureVersion = regexp.MustCompile(`^(\d{4}-\d{2}-\d{2}(-preview)?|preview|latest)$`)
	// azureDeployment is what Azure accepts as a deployment name.
	azureDeployment = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

// validateTypeSettings checks the settings only some provider types use: each
// is set only on its type, and is usable there.
func validateTypeSettings(path string, p *Provider, add addFunc) {
	only := func(key, typ string, set bool) {
		if set && p.Type != typ {
			add(path+"."+key, "only type %s providers use %s; this one is type %q", typ, key, p.Type)
		}
	}
	only("api_version", "azure", p.APIVersion != "")
	only("deployments", "azure", len(p.Deployments) > 0)
	only("bearer_token", "azure", p.BearerToken != "")
	only("default_max_tokens", "anthropic", p.DefaultMaxTokens != 0)
	validateHeaders(path, p.Headers, add)
	switch p.Type {
	case "azure":
		validateAzure(path, p, add)
	case "anthropic":
		if p.DefaultMaxTokens < 0 {
			add(path+".default_max_tokens", "must be at least 1; got %d", p.DefaultMaxTokens)
		}
	}
}

// validateHeaders refuses a header net/http would refuse to send (every call
// to the provider would fail as a transport error, and count against its
// breaker): a name that is not a token, a value with a control character.
func validateHeaders(path string, headers map[string]string, add addFunc) {
	names := slices.Sorted(maps.Keys(headers))
	for _, name := range names {
		switch {
		case !httpguts.ValidHeaderFieldName(name):
			add(path+".headers", "%q is not a header name (letters, digits and !#$%%&'*+-.^_`|~, no spaces)", name)
		case !httpguts.ValidHeaderFieldValue(headers[name]):
			add(path+".headers."+name, "the value has a control character (a line break, say), which no request may carry")
		}
	}
}

func validateAzure(path string, p *Provider, add addFunc) {
	if p.BaseURL == "" {
		add(path+".base_url", "type azure needs base_url: the resource's endpoint, such as "+
			"https://my-resource.openai.azure.com (or https://my-resource.openai.azure.com/openai/v1 for the v1 API)")
	} else if u, err := url.Parse(p.BaseURL); err == nil && u.Host != "" && (strings.Contains(u.Path, "/deployments") || u.RawQuery != "") {
		add(path+".base_url", "%q is a request's URL: write the resource's endpoint, %s://%s (the deployment goes in "+
			"deployments:, the api-version in api_version)", withoutUserinfo(p.BaseURL), u.Scheme, u.Host)
	}
	switch {
	case p.APIKey != "" && p.BearerToken != "":
		add(path+".bearer_token", "set api_key (sent as the api-key header) or bearer_token (an Entra ID token), not both")
	case p.APIKey == "" && p.BearerToken == "" && !hasAuthHeader(p.Headers):
		add(path+".api_key", "type azure needs api_key (sent as the api-key header, e.g. api_key: ${AZURE_OPENAI_API_KEY}) "+
			"or bearer_token (a Microsoft Entra ID token); Azure refuses every call without one")
	}
	if p.APIVersion != "" && !azureVersion.MatchString(p.APIVersion) {
		add(path+".api_version", "%q is not an Azure api-version: write a date such as %s (or one ending in -preview)",
			p.APIVersion, DefaultAzureAPIVersion)
	}
	models := make([]string, 0, len(p.Deployments))
	for m := range p.Deployments {
		models = append(models, m)
	}
	slices.Sort(models)
	for _, m := range models {
		d := p.Deployments[m]
		switch {
		case strings.TrimSpace(m) == "":
			add(path+".deployments", "a model name must not be empty")
		case d == "":
			add(fmt.Sprintf("%s.deployments.%s", path, m), "name the deployment that serves %s (or leave it out: a model without an entry is its own deployment)", m)
		case !azureDeployment.MatchString(d):
			add(fmt.Sprintf("%s.deployments.%s", path, m), "%q is not a deployment name: letters, digits, '-', '_' and '.', "+
				"starting with a letter or digit", d)
		}
	}
}

// selfCalls warns of providers whose base_url is Switchyard's own REST address
// (ANTHROPIC_BASE_URL left pointing at Switchyard for Claude Code, say): every
// request would come back to Switchyard and loop.
func (c *Config) selfCalls() []string {
	host, port, err := net.SplitHostPort(c.Server.HTTPAddr)
	if err != nil || port == "0" || !isLocal(host) && net.ParseIP(host) == nil {
		return nil
	}
	var out []string
	for _, name := range c.providerNames() {
		p := c.Providers[name]
		if p == nil {
			continue
		}
		u, err := url.Parse(p.BaseURL)
		if err != nil || u.Port() != port || !(isLocal(u.Hostname()) || u.Hostname() == host) {
			continue
		}
		out = append(out, fmt.Sprintf("provider %q calls Switchyard itself: its base_url %s is this server's http_addr %s, "+
			"so every request would loop back here; point it at the upstream (an ANTHROPIC_BASE_URL or OPENAI_BASE_URL "+
			"meant for a client?)", name, withoutUserinfo(p.BaseURL), c.Server.HTTPAddr))
	}
	return out
}

// isLocal reports whether host names this machine: loopback, localhost, or an
// unspecified listen address ("", 0.0.0.0, ::).
func isLocal(host string) bool {
	host = strings.Trim(host, "[]")
	if host == "" || host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || ip.IsUnspecified())
}
