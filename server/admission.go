package server

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"google.golang.org/grpc"

	adminpb "github.com/switchyard/switchyard/gen/switchyard/admin/v1"
)

// What a REST request must pass before its body is read: its key. (The read
// deadline on the whole request is http.Server's ReadTimeout; net/http lifts it
// once the body is read, so answers and streams may take longer.)

// adminBodyRoutes are the admin routes with a request body (see admin.proto), by
// "METHOD path" as admin.proto writes it ({var} matches one path segment): their
// key is checked before grpc-gateway decodes the body. Other admin routes carry
// no body and are checked by the interceptor chain alone.
var adminBodyRoutes = map[string]string{
	http.MethodPost + " /admin/v1/breakers:reset": adminpb.AdminService_ResetBreaker_FullMethodName,
	http.MethodPost + " /admin/v1/breakers:trip":  adminpb.AdminService_TripBreaker_FullMethodName,
	http.MethodPut + " /admin/v1/virtual_models":  adminpb.AdminService_UpsertVirtualModel_FullMethodName,
	http.MethodPost + " /admin/v1/keys":           adminpb.AdminService_CreateKey_FullMethodName,
	http.MethodPatch + " /admin/v1/keys/{id}":     adminpb.AdminService_UpdateKey_FullMethodName,
}

// adminBodyRoute finds the admin method of a body route (see adminBodyRoutes).
func adminBodyRoute(method, path string) (string, bool) {
	if m, ok := adminBodyRoutes[method+" "+path]; ok {
		return m, true
	}
	for route, m := range adminBodyRoutes {
		verb, tmpl, _ := strings.Cut(route, " ")
		if verb == method && strings.Contains(tmpl, "{") && matchTemplate(tmpl, path) {
			return m, true
		}
	}
	return "", false
}

// matchTemplate matches a path against a template whose {var} segments stand
// for one non-empty segment each.
func matchTemplate(tmpl, path string) bool {
	ts, ps := strings.Split(tmpl, "/"), strings.Split(path, "/")
	if len(ts) != len(ps) {
		return false
	}
	for i, t := range ts {
		if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
			if ps[i] == "" {
				return false
			}
		} else if t != ps[i] {
			return false
		}
	}
	return true
}

// authorized checks a REST call's key before its body is read, with the same
// authorizer as the interceptor chain (which checks it again, for gRPC and for
// calls let through). A refused call still passes the chain, whose own check
// refuses it, so that it gets its request id, log line, metrics and span like any
// other; the handler never runs and the body is never read.
func (f *front) authorized(w http.ResponseWriter, r *http.Request, method string) bool {
	err := f.admit(w, r, method)
	if err != nil {
		writeError(w, err)
	}
	return err == nil
}

// admit is authorized's check: nil for an accepted key; else the refusal, run
// through the chain (its headers copied to w), for the caller to write in its
// surface's shape.
func (f *front) admit(w http.ResponseWriter, r *http.Request, method string) error {
	if _, err := f.opt.auth.verify(method, r.Header.Get("Authorization")); err == nil {
		return nil
	}
	sink := &headerSink{method: method}
	ctx := grpc.NewContextWithServerTransportStream(incomingContext(r), sink)
	_, err := f.in.unary(ctx, nil, &grpc.UnaryServerInfo{FullMethod: method}, func(context.Context, any) (any, error) {
		return nil, errors.New("the chain let a refused call through") // never: the chain checks the same key
	})
	copyHeaders(w, sink)
	return err
}
