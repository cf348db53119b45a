package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	adminpb "github.com/switchyard/switchyard/gen/switchyard/admin/v1"
	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/fakeupstream"
)

const keysYAML = "  master_key: sk-master\n  admin_key: sk-admin\n"

func adminCall(t *testing.T, g *gateway, method, body string) map[string]any {
	t.Helper()
	args := []string{"-plaintext", "-H", "authorization: Bearer sk-admin"}
	if body != "" {
		args = append(args, "-d", body)
	}
	out := grpcurl(t, append(args, g.app.GRPCAddr(), "switchyard.admin.v1.AdminService/"+method)...)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &m), out)
	return m
}

func TestAdminWithGrpcurl(t *testing.T) {
	t.Parallel()
	backup := fakeupstream.New("gpt-4o-mini")
	t.Cleanup(backup.Close)
	g := start(t, keysYAML, withYAML("  backup:\n    type: openai\n    base_url: "+backup.URL+"\n"+
		"virtual_models:\n  - source: from-config\n    targets: [{model: up/gpt-4o}]\n"))

	// Providers: status and no secrets.
	out := grpcurl(t, "-plaintext", "-H", "authorization: Bearer sk-admin", g.app.GRPCAddr(), "switchyard.admin.v1.AdminService/ListProviders")
	require.NotContains(t, out, "sk-upstream", "upstream keys never leave the process")
	var provs struct {
		Providers []map[string]any `json:"providers"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &provs))
	require.Equal(t, "up", provs.Providers[1]["name"])
	require.Equal(t, "Healthy", provs.Providers[1]["status"])
	require.Equal(t, g.up.URL, provs.Providers[1]["base_url"])
	require.Equal(t, float64(2), provs.Providers[1]["discovered_models"])

	// Trip, list, see the effect, reset.
	b := adminCall(t, g, "TripBreaker", `{"provider":"up","duration":"10m"}`)["breaker"].(map[string]any)
	require.Equal(t, "BREAKER_STATE_OPEN", b["state"])
	require.NotEmpty(t, b["next_probe_at"])
	resp := post(t, g.base+"/chat/completions", chatBody+`}`, "Authorization", "Bearer sk-master")
	require.Equal(t, 503, resp.StatusCode, "a tripped breaker fails fast")
	require.Zero(t, g.up.Count())
	list := adminCall(t, g, "ListBreakers", "")["breakers"].([]any)
	require.Len(t, list, 2)
	out = grpcurl(t, "-plaintext", "-H", "authorization: Bearer sk-admin", g.app.GRPCAddr(), "switchyard.admin.v1.AdminService/ListProviders")
	require.Contains(t, out, "Circuit open")
	b = adminCall(t, g, "ResetBreaker", `{"provider":"up"}`)["breaker"].(map[string]any)
	require.Equal(t, "BREAKER_STATE_CLOSED", b["state"])
	resp = post(t, g.base+"/chat/completions", chatBody+`}`, "Authorization", "Bearer sk-master")
	require.Equal(t, 200, resp.StatusCode)

	// Move traffic with a virtual model: the same shape as in the YAML.
	vm := adminCall(t, g, "UpsertVirtualModel",
		`{"virtual_model":{"source":"up/gpt-4o","strategy":"failover","targets":[{"model":"backup/gpt-4o-mini","weight":1}],"failover":true}}`)["virtual_model"].(map[string]any)
	require.Equal(t, map[string]any{"source": "up/gpt-4o", "strategy": "failover",
		"targets": []any{map[string]any{"model": "backup/gpt-4o-mini", "weight": float64(1)}}, "failover": true}, vm)
	resp = post(t, g.base+"/chat/completions", chatBody+`}`, "Authorization", "Bearer sk-master")
	require.Equal(t, "backup/gpt-4o-mini", resp.Header.Get("X-Switchyard-Target"), "the next request follows the change")
	got := adminCall(t, g, "GetVirtualModel", `{"source":"up/gpt-4o"}`)
	require.Equal(t, vm, got["virtual_model"])
	all := adminCall(t, g, "ListVirtualModels", "")["virtual_models"].([]any)
	require.Len(t, all, 2)
	require.Equal(t, true, all[0].(map[string]any)["config_managed"])
	adminCall(t, g, "DeleteVirtualModel", `{"source":"up/gpt-4o"}`)
	resp = post(t, g.base+"/chat/completions", chatBody+`}`, "Authorization", "Bearer sk-master")
	require.Equal(t, "up/gpt-4o", resp.Header.Get("X-Switchyard-Target"))
	require.Contains(t, g.logs.String(), `"action":"upsert virtual model"`)
	require.Contains(t, g.logs.String(), `"who":"admin:`)
	require.NotContains(t, g.logs.String(), "sk-admin", "keys are never logged")
}

func TestAdminErrors(t *testing.T) {
	t.Parallel()
	g := start(t, keysYAML, withYAML("virtual_models:\n  - source: from-config\n    targets: [{model: up/gpt-4o}]\n"))
	admin := adminpb.NewAdminServiceClient(g.conn)
	ctx := withKey("sk-admin")
	cases := []struct {
		name string
		call func() error
		code codes.Code
		msg  string
	}{
		{"unknown provider", func() error {
			_, err := admin.TripBreaker(ctx, &adminpb.TripBreakerRequest{Provider: "nope"})
			return err
		}, codes.NotFound, "unknown provider"},
		{"bad duration", func() error {
			_, err := admin.TripBreaker(ctx, &adminpb.TripBreakerRequest{Provider: "up", Duration: "soon"})
			return err
		}, codes.InvalidArgument, "duration"},
		{"unknown target provider", func() error {
			_, err := admin.UpsertVirtualModel(ctx, &adminpb.UpsertVirtualModelRequest{VirtualModel: &adminpb.VirtualModel{
				Source: "x", Targets: []*adminpb.VirtualModelTarget{{Model: "nope/m"}}}})
			return err
		}, codes.InvalidArgument, "unknown provider"},
		{"empty targets", func() error {
			_, err := admin.UpsertVirtualModel(ctx, &adminpb.UpsertVirtualModelRequest{VirtualModel: &adminpb.VirtualModel{Source: "x"}})
			return err
		}, codes.InvalidArgument, "at least one target"},
		{"loop", func() error {
			_, err := admin.UpsertVirtualModel(ctx, &adminpb.UpsertVirtualModelRequest{VirtualModel: &adminpb.VirtualModel{
				Source: "up/loop", Targets: []*adminpb.VirtualModelTarget{{Model: "from-config"}}}})
			return err
		}, codes.InvalidArgument, ""},
		{"overwrite config-managed", func() error {
			_, err := admin.UpsertVirtualModel(ctx, &adminpb.UpsertVirtualModelRequest{VirtualModel: &adminpb.VirtualModel{
				Source: "from-config", Targets: []*adminpb.VirtualModelTarget{{Model: "up/gpt-4o"}}}})
			return err
		}, codes.FailedPrecondition, "config file"},
		{"delete config-managed", func() error {
			_, err := admin.DeleteVirtualModel(ctx, &adminpb.DeleteVirtualModelRequest{Source: "from-config"})
			return err
		}, codes.FailedPrecondition, "config file"},
		{"delete unknown", func() error {
			_, err := admin.DeleteVirtualModel(ctx, &adminpb.DeleteVirtualModelRequest{Source: "nope"})
			return err
		}, codes.NotFound, ""},
	}
	for _, tc := range cases { // one after another: they share the gateway's virtual models
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			require.Equal(t, tc.code, status.Code(err), "%s: %v", tc.name, err)
			require.Contains(t, status.Convert(err).Message(), tc.msg)
		})
	}
}

func TestAuthMatrix(t *testing.T) {
	t.Parallel()
	g := start(t, keysYAML)
	keys := map[string]string{"none": "", "wrong": "sk-wrong", "master": "sk-master", "admin": "sk-admin"}
	want := map[string]map[string]int{ // key → surface → HTTP status
		"none":   {"inference": 401, "admin": 401},
		"wrong":  {"inference": 401, "admin": 401},
		"master": {"inference": 200, "admin": 403},
		"admin":  {"inference": 403, "admin": 200},
	}
	grpcCode := map[int]codes.Code{200: codes.OK, 401: codes.Unauthenticated, 403: codes.PermissionDenied}
	for name, key := range keys {
		t.Run(name, func(t *testing.T) {
			header := []string{}
			ctx := context.Background()
			if key != "" {
				header = []string{"Authorization", "Bearer " + key}
				ctx = withKey(key)
			}
			// REST
			resp := post(t, g.base+"/chat/completions", chatBody+`}`, header...)
			require.Equal(t, want[name]["inference"], resp.StatusCode, "REST inference with %s key", name)
			if resp.StatusCode != 200 {
				readError(t, resp)
			}
			req, _ := http.NewRequest(http.MethodGet, "http://"+g.app.HTTPAddr()+"/admin/v1/breakers", nil)
			if key != "" {
				req.Header.Set("Authorization", "Bearer "+key)
			}
			aresp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			aresp.Body.Close()
			require.Equal(t, want[name]["admin"], aresp.StatusCode, "REST admin with %s key", name)
			// gRPC
			_, err = pb.NewChatServiceClient(g.conn).CreateChatCompletion(ctx, grpcReq())
			require.Equal(t, grpcCode[want[name]["inference"]], status.Code(err), "gRPC inference with %s key", name)
			_, err = adminpb.NewAdminServiceClient(g.conn).ListBreakers(ctx, &adminpb.ListBreakersRequest{})
			require.Equal(t, grpcCode[want[name]["admin"]], status.Code(err), "gRPC admin with %s key", name)
		})
	}
}

func TestVirtualModelsPersistAcrossRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	up := fakeupstream.New()
	t.Cleanup(up.Close)
	g := startWith(t, up, keysYAML+"  data_dir: "+dir+"\n")
	_, err := adminpb.NewAdminServiceClient(g.conn).UpsertVirtualModel(withKey("sk-admin"), &adminpb.UpsertVirtualModelRequest{
		VirtualModel: &adminpb.VirtualModel{Source: "kept", Strategy: "round_robin",
			Targets: []*adminpb.VirtualModelTarget{{Model: "up/gpt-4o"}, {Model: "up/gpt-4o-mini", Weight: proto.Int32(2)}}}})
	require.NoError(t, err)
	require.NoError(t, g.app.Shutdown(context.Background()))

	g2 := startWith(t, up, keysYAML+"  data_dir: "+dir+"\n")
	got, err := adminpb.NewAdminServiceClient(g2.conn).GetVirtualModel(withKey("sk-admin"), &adminpb.GetVirtualModelRequest{Source: "kept"})
	require.NoError(t, err)
	require.Equal(t, "round_robin", got.GetVirtualModel().GetStrategy())
	require.Len(t, got.GetVirtualModel().GetTargets(), 2)
	require.Equal(t, int32(2), got.GetVirtualModel().GetTargets()[1].GetWeight())
	resp := post(t, g2.base+"/chat/completions", strings.Replace(chatBody, "up/gpt-4o", "kept", 1)+`}`, "Authorization", "Bearer sk-master")
	require.Equal(t, 200, resp.StatusCode)
}

func TestAdminChangesUnderLiveTraffic(t *testing.T) {
	t.Parallel()
	g := start(t, keysYAML)
	admin := adminpb.NewAdminServiceClient(g.conn)
	chat := pb.NewChatServiceClient(g.conn)
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				src := fmt.Sprintf("live-%d", w)
				_, err := admin.UpsertVirtualModel(withKey("sk-admin"), &adminpb.UpsertVirtualModelRequest{VirtualModel: &adminpb.VirtualModel{
					Source: src, Targets: []*adminpb.VirtualModelTarget{{Model: "up/gpt-4o"}}}})
				if err != nil {
					errs <- err
					return
				}
				req := grpcReq()
				req.Model = src
				// A concurrent trip may open the breaker for a moment: that must
				// be the only way a call fails.
				if _, err := chat.CreateChatCompletion(withKey("sk-master"), req); err != nil && reasonOf(err) != "circuit_breaker_open" {
					errs <- err
					return
				}
				if i%5 == 0 {
					_, _ = admin.TripBreaker(withKey("sk-admin"), &adminpb.TripBreakerRequest{Provider: "up", Duration: "1ms"})
					_, _ = admin.ResetBreaker(withKey("sk-admin"), &adminpb.ResetBreakerRequest{Provider: "up"})
				}
				_, _ = admin.ListProviders(withKey("sk-admin"), &adminpb.ListProvidersRequest{})
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	list, err := admin.ListVirtualModels(withKey("sk-admin"), &adminpb.ListVirtualModelsRequest{})
	require.NoError(t, err)
	require.Len(t, list.GetVirtualModels(), 4)
}

// A weight of 0 sent through the admin API is 0, as in the config file: a
// target the weighted strategy never picks first (a backup), shown back as 0;
// before, it was taken for "unset" and became 1, half the traffic.
func TestAZeroWeightThroughTheAdminAPIIsABackup(t *testing.T) {
	t.Parallel()
	g := start(t, keysYAML)
	code, body := adminREST(t, g, http.MethodPut, "/admin/v1/virtual_models",
		`{"virtual_model":{"source":"weighted","strategy":"weighted","targets":[{"model":"up/gpt-4o","weight":1},{"model":"up/gpt-4o-mini","weight":0}]}}`)
	require.Equal(t, http.StatusOK, code, "%v", body)
	got, err := adminpb.NewAdminServiceClient(g.conn).GetVirtualModel(withKey("sk-admin"), &adminpb.GetVirtualModelRequest{Source: "weighted"})
	require.NoError(t, err)
	targets := got.GetVirtualModel().GetTargets()
	require.Len(t, targets, 2)
	require.Equal(t, int32(1), targets[0].GetWeight())
	require.NotNil(t, targets[1].Weight, "shown back")
	require.Equal(t, int32(0), targets[1].GetWeight())
	for i := range 20 {
		resp := post(t, g.base+"/chat/completions", strings.Replace(chatBody, "up/gpt-4o", "weighted", 1)+`}`, "Authorization", "Bearer sk-master")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, "up/gpt-4o", resp.Header.Get("X-Switchyard-Target"), "call %d", i)
	}
}
