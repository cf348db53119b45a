package server

import (
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/keys"
	"github.com/switchyard/switchyard/limits"
	"github.com/switchyard/switchyard/metrics"
	"github.com/switchyard/switchyard/tracing"
)

type stageClock struct{ now time.Time }

func (c *stageClock) Now() time.Time { return c.now }

// newKeys returns a registry with one key per spec, and their secrets.
func newKeys(t *testing.T, clk keys.Clock, specs ...keys.Spec) (*keys.Registry, []string) {
	t.Helper()
	reg, err := keys.NewRegistry(context.Background(), keys.NewMemoryStore(), clk, nil)
	require.NoError(t, err)
	var secrets []string
	for _, s := range specs {
		_, secret, err := reg.Create(context.Background(), s)
		require.NoError(t, err)
		secrets = append(secrets, secret)
	}
	return reg, secrets
}

func TestIdentify(t *testing.T) {
	clk := &stageClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	reg, s := newKeys(t, clk, keys.Spec{Name: "ok", Models: []string{"*"}},
		keys.Spec{Name: "revoked", Models: []string{"*"}},
		keys.Spec{Name: "expires", Models: []string{"*"}, ExpiresAt: clk.now.Add(time.Hour)})
	k, err := reg.Authenticate(s[1])
	require.NoError(t, err)
	_, err = reg.Revoke(context.Background(), k.ID)
	require.NoError(t, err)
	clk.now = clk.now.Add(2 * time.Hour)
	const inference, admin = pb.ChatService_CreateChatCompletion_FullMethodName, "/switchyard.admin.v1.AdminService/ListKeys"
	both := authorizer{keys: Keys{Master: "sk-master", Admin: "sk-admin"}, virtual: reg}
	open := authorizer{virtual: reg}                                                             // no master key: inference is not authenticated
	masterLikeAKey := authorizer{keys: Keys{Master: keys.SecretPrefix + "master"}, virtual: reg} // and no admin key
	tests := []struct {
		name    string
		a       authorizer
		method  string
		key     string
		code    codes.Code
		virtual string // the key's name when it is a virtual key
		msg     string
	}{
		{"master", both, inference, "sk-master", codes.OK, "", ""},
		{"virtual key", both, inference, s[0], codes.OK, "ok", ""},
		{"revoked virtual key", both, inference, s[1], codes.Unauthenticated, "", "revoked"},
		{"expired virtual key", both, inference, s[2], codes.Unauthenticated, "", "expired"},
		{"unknown sk-sy- key", both, inference, keys.SecretPrefix + "nope", codes.Unauthenticated, "", "Incorrect API key"},
		{"virtual key on the admin API", both, admin, s[0], codes.PermissionDenied, "", "admin API"},
		{"virtual key on the admin API without an admin key", open, admin, s[0], codes.PermissionDenied, "", "admin API"},
		{"admin key on inference", both, inference, "sk-admin", codes.PermissionDenied, "", "inference API"},
		{"no master key: a virtual key still counts", open, inference, s[0], codes.OK, "ok", ""},
		{"no master key: a revoked one is refused", open, inference, s[1], codes.Unauthenticated, "", "revoked"},
		{"no master key: an unknown virtual key is refused", open, inference, keys.SecretPrefix + "nope", codes.Unauthenticated, "", "no such virtual key"},
		{"no admin key: a master key in a virtual key's form passes", masterLikeAKey, admin, keys.SecretPrefix + "master", codes.OK, "", ""},
		{"no master key: anything else passes", open, inference, "whatever", codes.OK, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, k, err := tt.a.identify(tt.method, "Bearer "+tt.key)
			require.Equal(t, tt.code, status.Code(err), "%v", err)
			if tt.msg != "" {
				require.Contains(t, status.Convert(err).Message(), tt.msg)
			}
			if tt.virtual == "" {
				require.Nil(t, k)
			} else {
				require.Equal(t, tt.virtual, k.Name)
			}
		})
	}
}

// testChain is the interceptor chain with the admission stage over reg.
func testChain(reg *keys.Registry, lim *limits.Limiter) grpc.UnaryServerInterceptor {
	log := slog.New(slog.DiscardHandler)
	adm := &admissionStage{log: log, auth: authorizer{keys: Keys{Master: "sk-master"}, virtual: reg}, limiter: lim}
	unary, _ := interceptors(chain{log: log, m: metrics.New(), tracer: tracing.Noop().Tracer(tracing.Name), adm: adm, drain: newDrainer()})
	return unary
}

func callWith(unary grpc.UnaryServerInterceptor, secret string, h grpc.UnaryHandler) error {
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(mdAuthorization, "Bearer "+secret))
	ctx = grpc.NewContextWithServerTransportStream(ctx, &headerSink{})
	req := &pb.ChatCompletionRequest{Model: "up/m"}
	_, err := unary(ctx, req, &grpc.UnaryServerInfo{FullMethod: pb.ChatService_CreateChatCompletion_FullMethodName}, h)
	return err
}

// The concurrency slot is released however the call ends: answer, error,
// cancellation or a panic in the handler.
func TestConcurrencySlotIsReleasedHoweverTheCallEnds(t *testing.T) {
	ends := map[string]grpc.UnaryHandler{
		"answer": func(context.Context, any) (any, error) { return &pb.ChatCompletion{}, nil },
		"error":  func(context.Context, any) (any, error) { return nil, status.Error(codes.Unavailable, "down") },
		"cancelled": func(ctx context.Context, _ any) (any, error) {
			return nil, context.Canceled
		},
		"panic": func(context.Context, any) (any, error) { panic("boom") },
	}
	for name, end := range ends {
		t.Run(name, func(t *testing.T) {
			reg, s := newKeys(t, nil, keys.Spec{Name: "one", Models: []string{"*"}, Limits: limits.Limits{MaxConcurrency: 1}})
			unary := testChain(reg, limits.New(limits.NewMemory(), nil))
			_ = callWith(unary, s[0], end)
			err := callWith(unary, s[0], func(context.Context, any) (any, error) { return &pb.ChatCompletion{}, nil })
			require.NoError(t, err, "the first call's slot was released")
		})
	}
	t.Run("a call in flight holds it", func(t *testing.T) {
		reg, s := newKeys(t, nil, keys.Spec{Name: "one", Models: []string{"*"}, Limits: limits.Limits{MaxConcurrency: 1}})
		unary := testChain(reg, limits.New(limits.NewMemory(), nil))
		err := callWith(unary, s[0], func(context.Context, any) (any, error) {
			inner := callWith(unary, s[0], func(context.Context, any) (any, error) { return &pb.ChatCompletion{}, nil })
			require.Equal(t, codes.ResourceExhausted, status.Code(inner))
			return &pb.ChatCompletion{}, nil
		})
		require.NoError(t, err)
	})
}

// The tpm charge is corrected with the tokens the answer reported.
func TestTokensAreCorrectedWithTheAnswersUsage(t *testing.T) {
	clk := &stageClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	reg, s := newKeys(t, clk, keys.Spec{Name: "t", Models: []string{"*"}, Limits: limits.Limits{TPM: 1000}})
	lim := limits.New(limits.NewMemory(), clk)
	unary := testChain(reg, lim)
	used := func(n int) grpc.UnaryHandler {
		return func(ctx context.Context, _ any) (any, error) {
			reportOf(ctx).tokensIn = n
			return &pb.ChatCompletion{}, nil
		}
	}
	require.NoError(t, callWith(unary, s[0], used(600)))
	k, _ := reg.Authenticate(s[0])
	g, err := lim.Admit(context.Background(), "key:"+k.ID, k.Limits, 0)
	require.NoError(t, err)
	require.Equal(t, 400, g.Tokens.Remaining, "charged the 600 the answer used, not the small estimate")
}

func TestRateLimitedShape(t *testing.T) {
	tests := []struct {
		limit, wantType string
		after           time.Duration
		wantMS          string
	}{
		{limits.Requests, "requests", 1500 * time.Millisecond, "1500"},
		{limits.Tokens, "tokens", 250 * time.Millisecond, "250"},
		{limits.Concurrency, "requests", 0, "1000"},
		{limits.Requests, "requests", 0, "1"},
	}
	for _, tt := range tests {
		t.Run(tt.limit+tt.wantMS, func(t *testing.T) {
			err := rateLimited(&limits.ExceededError{Limit: tt.limit, Configured: 3, RetryAfter: tt.after})
			require.Equal(t, codes.ResourceExhausted, status.Code(err))
			e := fromStatus(status.Convert(err))
			require.Equal(t, http.StatusTooManyRequests, e.HTTPStatus)
			require.Equal(t, tt.wantType, e.Type)
			require.Equal(t, "rate_limit_exceeded", e.Code)
			require.Equal(t, tt.wantMS, e.RetryAfterMS)
		})
	}
}

func TestResetText(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0s", 20 * time.Millisecond: "20ms", time.Second: "1s",
		6 * time.Minute: "6m0s", 1234567 * time.Microsecond: "1.235s", -time.Second: "0s"} {
		require.Equal(t, want, resetText(d), d.String())
	}
}
