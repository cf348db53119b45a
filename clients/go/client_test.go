package switchyard_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/switchyard/switchyard/app"
	switchyard "github.com/switchyard/switchyard/clients/go"
	"github.com/switchyard/switchyard/config"
	adminpb "github.com/switchyard/switchyard/gen/switchyard/admin/v1"
	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/fakeupstream"
)

// start runs a real Switchyard on loopback with one fake upstream "up".
func start(t *testing.T) (*app.App, *fakeupstream.Server) {
	t.Helper()
	up := fakeupstream.New()
	t.Cleanup(up.Close)
	yaml := "server:\n  http_addr: 127.0.0.1:0\n  grpc_addr: 127.0.0.1:0\n  master_key: sk-m\n  admin_key: sk-a\n  data_dir: " +
		t.TempDir() + "\nproviders:\n  up:\n    type: openai\n    base_url: " + up.URL + "\n"
	path := filepath.Join(t.TempDir(), "c.yaml")
	require.NoError(t, os.WriteFile(path, []byte(yaml), 0o600))
	cfg, err := config.Load(path, func(string) (string, bool) { return "", false })
	require.NoError(t, err)
	a, err := app.Start(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Shutdown(context.Background()) })
	return a, up
}

func dial(t *testing.T, a *app.App, opts ...switchyard.Option) *switchyard.Client {
	t.Helper()
	c, err := switchyard.Dial(context.Background(), a.GRPCAddr(), append([]switchyard.Option{switchyard.WithInsecure()}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func req() *pb.ChatCompletionRequest {
	return &pb.ChatCompletionRequest{Model: "up/gpt-4o", Messages: []*pb.ChatMessage{switchyard.User("hi")}}
}

func TestChatStreamModels(t *testing.T) {
	t.Parallel()
	a, _ := start(t)
	c := dial(t, a, switchyard.WithKey("sk-m"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	resp, err := c.Chat(ctx, req())
	require.NoError(t, err)
	require.Equal(t, "Hello from the fake upstream!", switchyard.Text(resp))

	var text strings.Builder
	for chunk, err := range c.Stream(ctx, req()) {
		require.NoError(t, err)
		for _, ch := range chunk.GetChoices() {
			text.WriteString(ch.GetDelta().GetContent())
		}
	}
	require.Equal(t, "Hello from the fake upstream!", text.String())

	models, err := c.Models(ctx)
	require.NoError(t, err)
	require.Len(t, models, 2)
}

func TestTruncatedStreamIsAnError(t *testing.T) {
	t.Parallel()
	a, up := start(t)
	c := dial(t, a, switchyard.WithKey("sk-m"))
	up.Script(fakeupstream.Reply{Text: "a b c d", CutAfter: 2})
	var last error
	n := 0
	for _, err := range c.Stream(context.Background(), req()) {
		if err != nil {
			last = err
			break
		}
		n++
	}
	require.Equal(t, 2, n)
	require.True(t, switchyard.IsStreamIncomplete(last), "%v", last)
}

func TestErrorHelpers(t *testing.T) {
	t.Parallel()
	a, up := start(t)
	ctx := context.Background()
	_, err := dial(t, a).Chat(ctx, req())
	require.True(t, switchyard.IsUnauthenticated(err))
	_, err = dial(t, a, switchyard.WithKey("sk-wrong")).Chat(ctx, req())
	require.True(t, switchyard.IsUnauthenticated(err))

	c := dial(t, a, switchyard.WithKey("sk-m"), switchyard.WithAdminKey("sk-a"))
	r := req()
	r.Model = "nope"
	_, err = c.Chat(ctx, r)
	require.True(t, switchyard.IsNotFound(err))
	require.Equal(t, 404, switchyard.HTTPStatus(err))

	up.Script(fakeupstream.Reply{Status: 429, Header: map[string]string{"Retry-After": "600"}})
	_, err = c.Chat(ctx, req())
	require.True(t, switchyard.IsRateLimited(err))
	big := req()
	big.Messages = []*pb.ChatMessage{switchyard.User(strings.Repeat("x", 5<<20))}
	_, err = c.Chat(ctx, big)
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "grpc-go's own size limit")
	require.False(t, switchyard.IsRateLimited(err), "a message over the size limit is no 429: a retry cannot succeed")

	_, err = c.Admin.TripBreaker(ctx, "up", "", "1h")
	require.NoError(t, err)
	_, err = c.Chat(ctx, req())
	require.True(t, switchyard.IsBreakerOpen(err))
}

func TestAdmin(t *testing.T) {
	t.Parallel()
	a, _ := start(t)
	ctx := context.Background()
	c := dial(t, a, switchyard.WithKey("sk-m"), switchyard.WithAdminKey("sk-a"))
	b, err := c.Admin.TripBreaker(ctx, "up", "", "")
	require.NoError(t, err)
	require.Equal(t, adminpb.BreakerState_BREAKER_STATE_OPEN, b.GetState())
	list, err := c.Admin.Breakers(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	b, err = c.Admin.ResetBreaker(ctx, "up", "")
	require.NoError(t, err)
	require.Equal(t, adminpb.BreakerState_BREAKER_STATE_CLOSED, b.GetState())

	vm, err := c.Admin.UpsertVirtualModel(ctx, &adminpb.VirtualModel{Source: "fast", Targets: []*adminpb.VirtualModelTarget{{Model: "up/gpt-4o-mini"}}})
	require.NoError(t, err)
	require.Equal(t, "failover", vm.GetStrategy())
	r := req()
	r.Model = "fast"
	resp, err := c.Chat(ctx, r)
	require.NoError(t, err)
	require.Equal(t, "gpt-4o-mini", resp.GetModel())
	vms, err := c.Admin.VirtualModels(ctx)
	require.NoError(t, err)
	require.Len(t, vms, 1)
	require.NoError(t, c.Admin.DeleteVirtualModel(ctx, "fast"))
	provs, err := c.Admin.Providers(ctx)
	require.NoError(t, err)
	require.Equal(t, "Healthy", provs[0].GetStatus())

	_, err = dial(t, a, switchyard.WithKey("sk-m")).Admin.Breakers(ctx)
	require.Error(t, err, "the master key never grants admin")
}
