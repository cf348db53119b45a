package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/proto"

	"github.com/switchyard/switchyard/app"
	"github.com/switchyard/switchyard/config"
	adminpb "github.com/switchyard/switchyard/gen/switchyard/admin/v1"
	"github.com/switchyard/switchyard/internal/fakeupstream"
)

// adminREST calls an admin route over REST with the admin key and decodes the answer.
func adminREST(t *testing.T, g *gateway, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+g.app.HTTPAddr()+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer sk-admin")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m), "%s %s: %s", method, path, raw)
	return resp.StatusCode, m
}

// timeless blanks the RFC 3339 times, which differ between two calls.
func timeless(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, val := range x {
			switch k {
			case "opened_at", "next_probe_at", "last_discovery",
				"id", "prefix", "secret", "created_at", "updated_at", "revoked_at": // a key's, different for each key made

				out[k] = "<time>"
			default:
				out[k] = timeless(val)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = timeless(val)
		}
		return out
	}
	return v
}

// adminRoutes is every AdminService RPC over REST, in an order where each sees
// the state the ones before left. grpcBody is what grpcurl sends (default: the
// REST body); before runs between the REST call and the grpcurl call.
type adminRoute struct {
	name, rpc, method, path, body, grpcBody string
	before                                  func(t *testing.T, g *gateway)
	check                                   func(t *testing.T, got map[string]any)
}

var vmJSON = `{"source":"up/gpt-4o","strategy":"failover","targets":[{"model":"backup/gpt-4o-mini","weight":1},{"model":"up/gpt-4o","weight":1}],` +
	`"failover":{"enabled":true,"max_attempts":1,"retry_on_statuses":[503,"5xx"],"retry_on_errors":["overloaded"]}}`

func adminRouteTable() []adminRoute {
	upsert := func(t *testing.T, g *gateway) { adminCall(t, g, "UpsertVirtualModel", `{"virtual_model":`+vmJSON+`}`) }
	return []adminRoute{
		{name: "list providers", rpc: "ListProviders", method: http.MethodGet, path: "/admin/v1/providers",
			check: func(t *testing.T, got map[string]any) {
				require.Len(t, got["providers"], 2)
				require.Equal(t, "Healthy", got["providers"].([]any)[1].(map[string]any)["status"])
			}},
		{name: "list breakers", rpc: "ListBreakers", method: http.MethodGet, path: "/admin/v1/breakers",
			check: func(t *testing.T, got map[string]any) {
				require.Len(t, got["breakers"], 2)
				require.Equal(t, "BREAKER_STATE_CLOSED", got["breakers"].([]any)[0].(map[string]any)["state"])
			}},
		{name: "trip breaker", rpc: "TripBreaker", method: http.MethodPost, path: "/admin/v1/breakers:trip", body: `{"provider":"backup","duration":"10m"}`,
			check: func(t *testing.T, got map[string]any) {
				require.Equal(t, "BREAKER_STATE_OPEN", got["breaker"].(map[string]any)["state"])
			}},
		{name: "reset breaker", rpc: "ResetBreaker", method: http.MethodPost, path: "/admin/v1/breakers:reset", body: `{"provider":"backup"}`,
			check: func(t *testing.T, got map[string]any) {
				require.Equal(t, "BREAKER_STATE_CLOSED", got["breaker"].(map[string]any)["state"])
			}},
		{name: "upsert virtual model", rpc: "UpsertVirtualModel", method: http.MethodPut, path: "/admin/v1/virtual_models", body: `{"virtual_model":` + vmJSON + `}`,
			check: func(t *testing.T, got map[string]any) {
				var want map[string]any
				require.NoError(t, json.Unmarshal([]byte(vmJSON), &want))
				require.Equal(t, want, got["virtual_model"], "the virtual model comes back as it was sent")
			}},
		{name: "get virtual model by provider/model", rpc: "GetVirtualModel", method: http.MethodGet, path: "/admin/v1/virtual_models/up/gpt-4o",
			grpcBody: `{"source":"up/gpt-4o"}`,
			check: func(t *testing.T, got map[string]any) {
				require.Equal(t, "up/gpt-4o", got["virtual_model"].(map[string]any)["source"])
			}},
		{name: "get virtual model, slash escaped", rpc: "GetVirtualModel", method: http.MethodGet, path: "/admin/v1/virtual_models/up%2Fgpt-4o",
			grpcBody: `{"source":"up/gpt-4o"}`,
			check: func(t *testing.T, got map[string]any) {
				require.Equal(t, "up/gpt-4o", got["virtual_model"].(map[string]any)["source"])
			}},
		{name: "get virtual model by one-segment name", rpc: "GetVirtualModel", method: http.MethodGet, path: "/admin/v1/virtual_models/from-config",
			grpcBody: `{"source":"from-config"}`,
			check: func(t *testing.T, got map[string]any) {
				require.Equal(t, map[string]any{"source": "from-config", "strategy": "failover", "config_managed": true,
					"targets": []any{map[string]any{"model": "up/gpt-4o", "weight": float64(1)}}}, got["virtual_model"])
			}},
		{name: "list virtual models", rpc: "ListVirtualModels", method: http.MethodGet, path: "/admin/v1/virtual_models",
			check: func(t *testing.T, got map[string]any) {
				require.Len(t, got["virtual_models"], 2, "the collection, not GetVirtualModel with an empty source")
			}},
		{name: "delete virtual model", rpc: "DeleteVirtualModel", method: http.MethodDelete, path: "/admin/v1/virtual_models/up/gpt-4o",
			grpcBody: `{"source":"up/gpt-4o"}`, before: upsert,
			check: func(t *testing.T, got map[string]any) { require.Empty(t, got) }},
		// {key} is a key made before the table runs.
		{name: "create key", rpc: "CreateKey", method: http.MethodPost, path: "/admin/v1/keys",
			body: `{"name":"billing","models":["up/gpt-4o"],"limits":{"rpm":60}}`,
			check: func(t *testing.T, got map[string]any) {
				require.True(t, strings.HasPrefix(got["secret"].(string), "sk-sy-"))
				require.Equal(t, "billing", got["key"].(map[string]any)["name"])
			}},
		{name: "list keys", rpc: "ListKeys", method: http.MethodGet, path: "/admin/v1/keys",
			check: func(t *testing.T, got map[string]any) { require.Len(t, got["keys"], 3) }},
		{name: "get key", rpc: "GetKey", method: http.MethodGet, path: "/admin/v1/keys/{key}", grpcBody: `{"id":"{key}"}`,
			check: func(t *testing.T, got map[string]any) { require.Equal(t, "first", got["key"].(map[string]any)["name"]) }},
		{name: "update key", rpc: "UpdateKey", method: http.MethodPatch, path: "/admin/v1/keys/{key}",
			body: `{"limits":{"tpm":1000}}`, grpcBody: `{"id":"{key}","limits":{"tpm":1000}}`,
			check: func(t *testing.T, got map[string]any) {
				require.Equal(t, map[string]any{"tpm": float64(1000)}, got["key"].(map[string]any)["limits"])
			}},
		{name: "revoke key", rpc: "RevokeKey", method: http.MethodDelete, path: "/admin/v1/keys/{key}", grpcBody: `{"id":"{key}"}`,
			check: func(t *testing.T, got map[string]any) { require.NotEmpty(t, got["key"].(map[string]any)["revoked_at"]) }},
		{name: "query usage", rpc: "QueryUsage", method: http.MethodGet,
			path:     "/admin/v1/usage?start_time=2026-01-01T00:00:00Z&end_time=2999-01-01T00:00:00Z&group_by=key&group_by=model",
			grpcBody: `{"start_time":"2026-01-01T00:00:00Z","end_time":"2999-01-01T00:00:00Z","group_by":["key","model"]}`,
			check:    func(t *testing.T, got map[string]any) { require.Equal(t, "2999-01-01T00:00:00Z", got["end_time"]) }},
		{name: "list requests", rpc: "ListRequests", method: http.MethodGet,
			path:     "/admin/v1/requests?start_time=2026-01-01T00:00:00Z&end_time=2999-01-01T00:00:00Z&page_size=10",
			grpcBody: `{"start_time":"2026-01-01T00:00:00Z","end_time":"2999-01-01T00:00:00Z","page_size":10}`,
			check:    func(t *testing.T, got map[string]any) { require.Empty(t, got["records"], "no inference call yet") }},
	}
}

// TestAdminRESTMatchesGRPC calls every admin RPC over REST and over gRPC (grpcurl)
// and requires the same JSON from both.
func TestAdminRESTMatchesGRPC(t *testing.T) {
	t.Parallel()
	backup := fakeupstream.New("gpt-4o-mini")
	t.Cleanup(backup.Close)
	g := start(t, keysYAML, withYAML("  backup:\n    type: openai\n    base_url: "+backup.URL+"\n"+
		"virtual_models:\n  - source: from-config\n    targets: [{model: up/gpt-4o}]\n"))
	covered := map[string]bool{}
	key := adminCall(t, g, "CreateKey", `{"name":"first","models":["*"]}`)["key"].(map[string]any)["id"].(string)
	for _, rt := range adminRouteTable() {
		covered[rt.rpc] = true
		rt.path, rt.grpcBody = strings.ReplaceAll(rt.path, "{key}", key), strings.ReplaceAll(rt.grpcBody, "{key}", key)
		t.Run(rt.name, func(t *testing.T) {
			code, rest := adminREST(t, g, rt.method, rt.path, rt.body)
			require.Equal(t, http.StatusOK, code, "%s %s: %v", rt.method, rt.path, rest)
			rt.check(t, rest)
			if rt.before != nil {
				rt.before(t, g)
			}
			body := rt.grpcBody
			if body == "" {
				body = rt.body
			}
			grpc := adminCall(t, g, rt.rpc, body)
			require.Equal(t, timeless(grpc), timeless(rest), "REST and gRPC answer the same JSON")
		})
	}
	for _, m := range adminMethods() {
		require.True(t, covered[m], "%s has a REST case", m)
	}
	resp := post(t, g.base+"/chat/completions", chatBody+`}`, "Authorization", "Bearer sk-master")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "up/gpt-4o", resp.Header.Get("X-Switchyard-Target"), "the REST delete took effect")
}

// TestAdminRESTErrors: the REST admin routes answer errors with OpenAI error
// bodies and the status matching the gRPC code.
func TestAdminRESTErrors(t *testing.T) {
	t.Parallel()
	g := start(t, keysYAML, withYAML("virtual_models:\n  - source: from-config\n    targets: [{model: up/gpt-4o}]\n"))
	cases := []struct {
		name, method, path, body string
		status                   int
		param                    string
	}{
		{"unknown virtual model", http.MethodGet, "/admin/v1/virtual_models/nope", "", http.StatusNotFound, ""},
		{"unknown provider", http.MethodPost, "/admin/v1/breakers:trip", `{"provider":"nope"}`, http.StatusNotFound, ""},
		{"bad duration", http.MethodPost, "/admin/v1/breakers:trip", `{"provider":"up","duration":"soon"}`, http.StatusBadRequest, "duration"},
		{"unknown field", http.MethodPost, "/admin/v1/breakers:trip", `{"provider":"up","durations":"1m"}`, http.StatusBadRequest, ""},
		{"no source", http.MethodPut, "/admin/v1/virtual_models", `{"virtual_model":{"targets":[{"model":"up/gpt-4o"}]}}`, http.StatusBadRequest, "virtual_model.source"},
		{"bad failover block", http.MethodPut, "/admin/v1/virtual_models", `{"virtual_model":{"source":"x","targets":[{"model":"up/gpt-4o"}],"failover":{"tries":2}}}`,
			http.StatusBadRequest, "virtual_model.failover.tries"},
		{"unknown budget period", http.MethodPost, "/admin/v1/keys", `{"name":"x","models":["*"],"budget_usd":10,"budget_period":"monthly"}`,
			http.StatusBadRequest, "budget_period"},
		{"expiry at Go's zero time", http.MethodPost, "/admin/v1/keys", `{"name":"x","models":["*"],"expires_at":"0001-01-01T00:00:00Z"}`,
			http.StatusBadRequest, "expires_at"},
		{"budget without a period", http.MethodPost, "/admin/v1/keys", `{"name":"x","models":["*"],"budget_usd":10}`, http.StatusBadRequest, "budget_period"},
		{"NaN budget", http.MethodPost, "/admin/v1/keys", `{"name":"x","models":["*"],"budget_usd":"NaN","budget_period":"day"}`, http.StatusBadRequest, "budget_usd"},
		{"max_attempts as a string", http.MethodPut, "/admin/v1/virtual_models", `{"virtual_model":{"source":"x","targets":[{"model":"up/gpt-4o"}],"failover":{"max_attempts":"2"}}}`, http.StatusBadRequest, "virtual_model.failover.max_attempts"},
		{"max_attempts not whole", http.MethodPut, "/admin/v1/virtual_models", `{"virtual_model":{"source":"x","targets":[{"model":"up/gpt-4o"}],"failover":{"max_attempts":2.7}}}`, http.StatusBadRequest, "virtual_model.failover.max_attempts"},
		{"statuses not a list", http.MethodPut, "/admin/v1/virtual_models", `{"virtual_model":{"source":"x","targets":[{"model":"up/gpt-4o"}],"failover":{"retry_on_statuses":429}}}`, http.StatusBadRequest, "virtual_model.failover.retry_on_statuses"},
		{"a status of the wrong type", http.MethodPut, "/admin/v1/virtual_models", `{"virtual_model":{"source":"x","targets":[{"model":"up/gpt-4o"}],"failover":{"retry_on_statuses":[429,true]}}}`, http.StatusBadRequest, "virtual_model.failover.retry_on_statuses[1]"},
		{"an error phrase not a string", http.MethodPut, "/admin/v1/virtual_models", `{"virtual_model":{"source":"x","targets":[{"model":"up/gpt-4o"}],"failover":{"retry_on_errors":[1]}}}`, http.StatusBadRequest, "virtual_model.failover.retry_on_errors[0]"},
		{"config-managed", http.MethodDelete, "/admin/v1/virtual_models/from-config", "", http.StatusConflict, ""},
		{"delete unknown", http.MethodDelete, "/admin/v1/virtual_models/up/nope", "", http.StatusNotFound, ""},
		{"body over max_body_bytes", http.MethodPut, "/admin/v1/virtual_models",
			`{"virtual_model":{"source":"x","targets":[{"model":"up/gpt-4o"}]},"pad":"` + strings.Repeat("x", 9<<20) + `"}`, http.StatusRequestEntityTooLarge, ""},
		// Past grpc-go's 4 MiB message bound, within max_body_bytes: the check answers
		// (it was a 429 rate_limit_error naming grpc's bound).
		{"a body of 5 MB", http.MethodPost, "/admin/v1/keys", `{"name":"` + strings.Repeat("x", 5<<20) + `","models":["*"]}`,
			http.StatusBadRequest, "name"},
		{"a source past 256 bytes", http.MethodPut, "/admin/v1/virtual_models", `{"virtual_model":{"source":"` + strings.Repeat("x", 257) + `","targets":[{"model":"up/gpt-4o"}]}}`,
			http.StatusBadRequest, "virtual_model.source"},
		{"more than 64 targets", http.MethodPut, "/admin/v1/virtual_models", `{"virtual_model":{"source":"x","targets":[` +
			strings.TrimSuffix(strings.Repeat(`{"model":"up/gpt-4o"},`, 65), ",") + `]}}`, http.StatusBadRequest, "virtual_model.targets"},
		{"a method the route does not take", http.MethodDelete, "/admin/v1/keys", "", http.StatusMethodNotAllowed, ""},
		{"a method the route does not take, with a body", http.MethodPost, "/admin/v1/virtual_models",
			`{"virtual_model":{"source":"x","targets":[{"model":"up/gpt-4o"}]}}`, http.StatusMethodNotAllowed, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body := adminREST(t, g, tc.method, tc.path, tc.body)
			require.Equal(t, tc.status, code, "%v", body)
			e, ok := body["error"].(map[string]any)
			require.True(t, ok, "an OpenAI error body: %v", body)
			require.NotEmpty(t, e["message"])
			if tc.param != "" {
				require.Equal(t, tc.param, e["param"])
			}
			if tc.status < 500 {
				require.NotEqual(t, "server_error", e["type"], "a client's fault: %v", e)
			}
		})
	}
	t.Run("a form POST to a route that only reads is not a read", func(t *testing.T) {
		// curl -d sends a form's content type: grpc-gateway's path-length fallback
		// served it as the GET, a 200 for a write that never happened.
		req, err := http.NewRequest(http.MethodPost, "http://"+g.app.HTTPAddr()+"/admin/v1/virtual_models",
			strings.NewReader(`{"virtual_model":{"source":"viapost","targets":[{"model":"up/gpt-4o"}]}}`))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer sk-admin")
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
		code, _ := adminREST(t, g, http.MethodGet, "/admin/v1/virtual_models/viapost", "")
		require.Equal(t, http.StatusNotFound, code)
	})
}

// adminMethods lists AdminService's RPCs.
func adminMethods() []string {
	var out []string
	ms := adminpb.File_switchyard_admin_v1_admin_proto.Services().ByName("AdminService").Methods()
	for i := range ms.Len() {
		out = append(out, string(ms.Get(i).Name()))
	}
	return out
}

// TestREADMEListsEveryAdminRoute: the README names each admin route with its
// HTTP method, as the proto binds it, and gives a curl for it.
func TestREADMEListsEveryAdminRoute(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	ms := adminpb.File_switchyard_admin_v1_admin_proto.Services().ByName("AdminService").Methods()
	for i := range ms.Len() {
		m := ms.Get(i)
		rule := proto.GetExtension(m.Options(), annotations.E_Http).(*annotations.HttpRule)
		var verb, path string
		switch p := rule.GetPattern().(type) {
		case *annotations.HttpRule_Get:
			verb, path = "GET", p.Get
		case *annotations.HttpRule_Post:
			verb, path = "POST", p.Post
		case *annotations.HttpRule_Put:
			verb, path = "PUT", p.Put
		case *annotations.HttpRule_Delete:
			verb, path = "DELETE", p.Delete
		case *annotations.HttpRule_Patch:
			verb, path = "PATCH", p.Patch
		}
		row := "| `" + verb + " " + path + "` | `" + string(m.Name()) + "` |"
		require.True(t, strings.Contains(string(readme), row), "README admin routes table lacks %s", row)
		curlPath, _, _ := strings.Cut(path, "{")
		curl := "curl -s -X " + verb + " localhost:8080" + curlPath
		require.True(t, strings.Contains(string(readme), curl), "README lacks a curl for %s (%s)", m.Name(), curl)
	}
}

// TestREADMEAdminCurlsRunOnTheDefaultSetup runs the README's admin curl block
// against the default set-up (no config: the simulator, no keys), in order; each
// must answer 2xx.
func TestREADMEAdminCurlsRunOnTheDefaultSetup(t *testing.T) {
	t.Parallel()
	_, err := exec.LookPath("curl")
	require.NoError(t, err, "the README's examples need curl")
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	_, block, ok := strings.Cut(string(readme), "<!-- admin-curl -->\n```sh\n")
	require.True(t, ok, "README has the admin-curl block")
	block, _, ok = strings.Cut(block, "```")
	require.True(t, ok)
	commands := strings.Split(strings.ReplaceAll(block, "\\\n", ""), "\n")

	path := filepath.Join(t.TempDir(), "switchyard.yaml")
	require.NoError(t, os.WriteFile(path, []byte("server:\n  http_addr: 127.0.0.1:0\n  grpc_addr: 127.0.0.1:0\n  data_dir: "+t.TempDir()+"\n"), 0o600))
	cfg, err := config.Load(path, func(string) (string, bool) { return "", false })
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, err := app.Start(ctx, cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, a.Shutdown(context.Background())) })

	ran := 0
	var created, updated map[string]any
	for _, c := range commands {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		c = strings.Replace(strings.Replace(c, "curl -s ", "curl -sS --fail-with-body ", 1), "localhost:8080", a.HTTPAddr(), -1)
		out, err := exec.Command("sh", "-c", c).CombinedOutput()
		require.NoError(t, err, "%s: %s", c, out)
		require.True(t, json.Valid(out), "%s: %s", c, out)
		switch {
		case strings.HasPrefix(c, "curl -sS --fail-with-body -X POST "+a.HTTPAddr()+"/admin/v1/keys "):
			created = limitsOf(t, out)
		case strings.HasPrefix(c, "curl -sS --fail-with-body -X PATCH "):
			updated = limitsOf(t, out)
		}
		ran++
	}
	require.Equal(t, len(adminMethods()), ran, "one curl per admin route")
	// An update's limits replace the key's whole: the example that raises rpm
	// must send the other limits again, or they are dropped.
	require.NotEmpty(t, created)
	for name := range created {
		require.Contains(t, updated, name, "the README's key update drops the key's %s", name)
	}
}

// limitsOf is the limits of the key in a CreateKey or UpdateKey answer.
func limitsOf(t *testing.T, answer []byte) map[string]any {
	t.Helper()
	var got struct {
		Key struct {
			Limits map[string]any `json:"limits"`
		} `json:"key"`
	}
	require.NoError(t, json.Unmarshal(answer, &got), "%s", answer)
	return got.Key.Limits
}

// Text that is not UTF-8 in a path or a query (%ff) is read as U+FFFD, as a
// JSON body's strings are: the route answers as it would any other name (a 404
// for no such key or model, a filter that matches nothing, a parameter no
// field has ignored), never a 500, and the key is checked first. Before, the
// bytes reached a proto string the in-process client refused to send: a 500
// with no request line.
func TestTextThatIsNotUTF8InAPathOrAQuery(t *testing.T) {
	t.Parallel()
	g := start(t, keysYAML)
	for _, tc := range []struct {
		name, method, path, key string
		status                  int
	}{
		{"a key id", http.MethodGet, "/admin/v1/keys/%ff", "sk-admin", http.StatusNotFound},
		{"a key id, without a key", http.MethodGet, "/admin/v1/keys/%ff", "", http.StatusUnauthorized},
		{"a virtual model to delete", http.MethodDelete, "/admin/v1/virtual_models/%ff%fe", "sk-admin", http.StatusNotFound},
		{"a filter", http.MethodGet, "/admin/v1/requests?model=%ff", "sk-admin", http.StatusOK},
		{"a parameter no field has", http.MethodGet, "/admin/v1/keys?_=%ff", "sk-admin", http.StatusOK},
		{"a model name (inference)", http.MethodGet, "/v1/models/%ff", "sk-master", http.StatusNotFound},
		{"a parameter no field has (inference)", http.MethodGet, "/v1/models?cb=%ff", "sk-master", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, "http://"+g.app.HTTPAddr()+tc.path, http.NoBody)
			require.NoError(t, err)
			if tc.key != "" {
				req.Header.Set("Authorization", "Bearer "+tc.key)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.Equal(t, tc.status, resp.StatusCode, "%s", b)
			require.True(t, json.Valid(b), "%s", b)
		})
	}
}

// TestATripWithoutAModelOnPerModelBreakers: with breakers per model, a trip
// that names no model drains the whole provider: its models' calls are refused
// (503 circuit_breaker_open, failover-eligible), the listing shows the
// provider's breaker open, and a reset ends it. It was a 200 that tripped a
// breaker no call consults, while traffic kept flowing.
func TestATripWithoutAModelOnPerModelBreakers(t *testing.T) {
	t.Parallel()
	g := start(t, keysYAML, withYAML("resilience:\n  circuit_breaker:\n    scope: model\n"))
	auth := []string{"Authorization", "Bearer sk-master"}
	require.Equal(t, http.StatusOK, post(t, g.base+"/chat/completions", chatBody+"}", auth...).StatusCode)
	code, body := adminREST(t, g, http.MethodPost, "/admin/v1/breakers:trip", `{"provider":"up","duration":"10m"}`)
	require.Equal(t, http.StatusOK, code, "%v", body)
	resp := post(t, g.base+"/chat/completions", chatBody+"}", auth...)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	var e errorBody
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
	require.Equal(t, "circuit_breaker_open", *e.Error.Code)
	_, list := adminREST(t, g, http.MethodGet, "/admin/v1/breakers", "")
	require.Contains(t, fmt.Sprint(list), "BREAKER_STATE_OPEN")
	code, body = adminREST(t, g, http.MethodPost, "/admin/v1/breakers:reset", `{"provider":"up"}`)
	require.Equal(t, http.StatusOK, code, "%v", body)
	require.Equal(t, http.StatusOK, post(t, g.base+"/chat/completions", chatBody+"}", auth...).StatusCode)
}
