package fakeupstream

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
)

// Azure is a fake Azure OpenAI resource on 127.0.0.1:0. It speaks both of
// Azure's chat APIs:
//
//   - the deployment API: POST /openai/deployments/{deployment}/chat/completions?api-version=V
//     (a missing api-version is a 404, an unknown deployment a 404 DeploymentNotFound);
//   - the v1 API: POST /openai/v1/chat/completions (the body's model is the deployment).
//
// A request must carry the api-key header Key or "Authorization: Bearer Token"
// (401 in Azure's shape otherwise). Answers come from the embedded Server's script
// (OpenAI's wire, which Azure speaks), and every chat request is recorded with
// its Azure path and query.
type Azure struct {
	*Server
	// URL is the resource's root, e.g. http://127.0.0.1:PORT (base_url of the
	// deployment API; add /openai/v1 for the v1 API).
	URL string
	// Key is the accepted api-key; Token the accepted Entra ID bearer token.
	Key, Token string

	srv         *httptest.Server
	deployments map[string]bool
	mu          sync.Mutex
	requests    []AzureRequest
}

// AzureRequest is one recorded chat request to the fake Azure resource.
type AzureRequest struct {
	Path   string
	Query  url.Values
	Header http.Header
	Body   []byte
}

// AzureContentFilterError is Azure's answer to a prompt its content filter
// rejects (HTTP 400, code content_filter), as the service sends it.
const AzureContentFilterError = `{"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry. To learn more about our content filtering policies please read our documentation: https://go.microsoft.com/fwlink/?linkid=2198766","type":null,"param":"prompt","code":"content_filter","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"hate":{"filtered":false,"severity":"safe"},"self_harm":{"filtered":false,"severity":"safe"},"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":true,"severity":"medium"}}}}}`

// NewAzure starts a fake Azure resource accepting key (api-key) and token
// (bearer; empty accepts none) and serving the named deployments (none: any).
func NewAzure(key, token string, deployments ...string) *Azure {
	a := &Azure{Server: &Server{models: deployments}, Key: key, Token: token, deployments: map[string]bool{}}
	for _, d := range deployments {
		a.deployments[d] = true
	}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	a.URL = a.srv.URL
	a.Server.URL = a.srv.URL + "/openai/v1"
	a.Server.srv = a.srv
	return a
}

// AzureRequests returns the chat requests received so far.
func (a *Azure) AzureRequests() []AzureRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]AzureRequest(nil), a.requests...)
}

func (a *Azure) serve(w http.ResponseWriter, r *http.Request) {
	if !a.authorized(r) {
		azureError(w, http.StatusUnauthorized, "401", "Access denied due to invalid subscription key or wrong API endpoint. "+
			"Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.")
		return
	}
	path := r.URL.Path
	switch {
	case r.Method != http.MethodPost:
		azureError(w, http.StatusNotFound, "404", "Resource not found")
		return
	case path == "/openai/v1/chat/completions":
	case strings.HasPrefix(path, "/openai/deployments/") && strings.HasSuffix(path, "/chat/completions"):
		if r.URL.Query().Get("api-version") == "" {
			azureError(w, http.StatusNotFound, "404", "Resource not found")
			return
		}
		d := strings.TrimSuffix(strings.TrimPrefix(path, "/openai/deployments/"), "/chat/completions")
		if len(a.deployments) > 0 && !a.deployments[d] {
			azureError(w, http.StatusNotFound, "DeploymentNotFound", "The API deployment for this resource does not exist. "+
				"If you created the deployment within the last 5 minutes, please wait a moment and try again.")
			return
		}
	default:
		azureError(w, http.StatusNotFound, "404", "Resource not found")
		return
	}
	body, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	a.requests = append(a.requests, AzureRequest{Path: path, Query: r.URL.Query(), Header: r.Header.Clone(), Body: body})
	a.mu.Unlock()
	r2 := r.Clone(r.Context())
	r2.URL.Path, r2.URL.RawQuery = "/v1/chat/completions", ""
	r2.Body = io.NopCloser(bytes.NewReader(body))
	a.Server.serve(w, r2)
}

func (a *Azure) authorized(r *http.Request) bool {
	if k := r.Header.Get("api-key"); k != "" {
		return k == a.Key
	}
	return a.Token != "" && r.Header.Get("Authorization") == "Bearer "+a.Token
}

func azureError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": code, "message": msg}})
}
