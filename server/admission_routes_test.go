package server

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/proto"

	adminpb "github.com/switchyard/switchyard/gen/switchyard/admin/v1"
)

// adminBodyRoutes is written by hand; the contract says which admin routes carry
// a body. Every one of them must be in the table, so that its key is checked
// before the body is read (a route left out would be decoded first).
func TestAdminBodyRoutesCoverTheContract(t *testing.T) {
	svc := adminpb.File_switchyard_admin_v1_admin_proto.Services().ByName("AdminService")
	require.NotNil(t, svc)
	want := map[string]string{}
	methods := svc.Methods()
	for i := range methods.Len() {
		m := methods.Get(i)
		rule, _ := proto.GetExtension(m.Options(), annotations.E_Http).(*annotations.HttpRule)
		if rule.GetBody() == "" {
			continue
		}
		var verb, path string
		switch {
		case rule.GetPost() != "":
			verb, path = http.MethodPost, rule.GetPost()
		case rule.GetPut() != "":
			verb, path = http.MethodPut, rule.GetPut()
		case rule.GetPatch() != "":
			verb, path = http.MethodPatch, rule.GetPatch()
		}
		want[verb+" "+path] = "/" + string(svc.FullName()) + "/" + string(m.Name())
	}
	require.NotEmpty(t, want)
	require.Equal(t, want, adminBodyRoutes)
}

// A body route with a path variable is found for any value of it, and only there.
func TestAdminBodyRouteMatchesTemplates(t *testing.T) {
	cases := []struct {
		method, path, want string
	}{
		{http.MethodPatch, "/admin/v1/keys/key_0123", adminpb.AdminService_UpdateKey_FullMethodName},
		{http.MethodPost, "/admin/v1/keys", adminpb.AdminService_CreateKey_FullMethodName},
		{http.MethodPatch, "/admin/v1/keys/", ""},
		{http.MethodPatch, "/admin/v1/keys/a/b", ""},
		{http.MethodGet, "/admin/v1/keys/key_0123", ""},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			got, ok := adminBodyRoute(tc.method, tc.path)
			require.Equal(t, tc.want != "", ok)
			require.Equal(t, tc.want, got)
		})
	}
}
