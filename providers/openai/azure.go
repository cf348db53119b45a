package openai

import (
	"net/url"
	"slices"
	"strings"
)

// DefaultAzureAPIVersion is the api-version sent to Azure OpenAI's deployment API
// when none is configured: the newest dated GA (non-preview) data-plane version.
// Later dated versions are previews, which Microsoft may change or retire at
// short notice; newer features come through the v1 API, which takes no
// api-version at all (see Azure).
const DefaultAzureAPIVersion = "2024-10-21"

// Azure makes a Client speak Azure OpenAI (type: azure). Two APIs exist:
//
//   - the deployment API, base_url https://{resource}.openai.azure.com: chat is
//     POST {base_url}/openai/deployments/{deployment}/chat/completions?api-version=V,
//     embeddings likewise under the deployment;
//   - the v1 API, base_url ending in /openai/v1: plain OpenAI paths
//     ({base_url}/chat/completions, no api-version), with the deployment name
//     sent as the body's "model".
//
// The key goes in the api-key header (Config.APIKey), or a Microsoft Entra ID
// token as "Authorization: Bearer" (BearerToken).
type Azure struct {
	// APIVersion is the deployment API's api-version query parameter;
	// DefaultAzureAPIVersion when empty. The v1 API sends none.
	APIVersion string
	// Deployments maps model names (what clients ask for) to deployment names; a
	// model without an entry is its own deployment name.
	Deployments map[string]string
	// BearerToken, when set, is sent as "Authorization: Bearer" (an Entra ID
	// access token). It is sent as written: a token that expires must be renewed
	// by restarting with a new one.
	BearerToken string
}

// v1 reports whether base is the v1 API's root (its path ends in /openai/v1).
func azureV1(base string) bool {
	u, err := url.Parse(base)
	return err == nil && strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/openai/v1")
}

// deployment is the Azure deployment that serves model.
func (a *Azure) deployment(model string) string {
	if d := a.Deployments[model]; d != "" {
		return d
	}
	return model
}

// endpoint is the URL of path ("chat/completions", "embeddings", "models") for
// model: {base_url}/{path} for OpenAI-compatible upstreams and Azure's v1 API,
// the deployment's URL with its api-version for Azure's deployment API.
func (c *Client) endpoint(model, path string) string {
	a := c.cfg.Azure
	if a == nil || c.azureV1 {
		return c.baseURL + "/" + path
	}
	version := a.APIVersion
	if version == "" {
		version = DefaultAzureAPIVersion
	}
	q := "?api-version=" + url.QueryEscape(version)
	if path == "models" {
		return c.baseURL + "/openai/models" + q
	}
	return c.baseURL + "/openai/deployments/" + url.PathEscape(a.deployment(model)) + "/" + path + q
}

// bodyModel is the "model" member sent upstream for model: Azure's v1 API takes
// the deployment name there; everyone else the model name.
func (c *Client) bodyModel(model string) string {
	if c.cfg.Azure != nil && c.azureV1 {
		return c.cfg.Azure.deployment(model)
	}
	return model
}

// azureBase is the base URL the deployment API's paths are added to: a base_url
// written with a trailing /openai (the resource's root plus the API's prefix) is
// accepted as the resource's root.
func azureBase(base string) string {
	base = strings.TrimRight(base, "/")
	if !azureV1(base) {
		base = strings.TrimSuffix(base, "/openai")
	}
	return base
}

// azureModels is what an Azure provider serves: Azure's data plane lists the
// models a resource may deploy, not its deployments, so there is nothing to
// discover; the models named in deployments are served (plus the provider's
// configured models:, which the router adds).
func azureModels(a *Azure) []string {
	ids := make([]string, 0, len(a.Deployments))
	for m := range a.Deployments {
		ids = append(ids, m)
	}
	slices.Sort(ids)
	return ids
}
