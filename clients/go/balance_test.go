package switchyard_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"

	"github.com/switchyard/switchyard/app"
	switchyard "github.com/switchyard/switchyard/clients/go"
	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/internal/fakeupstream"
)

// startServer runs a Switchyard with extra server: lines (indented two spaces).
func startServer(t *testing.T, serverLines string) (*app.App, *fakeupstream.Server) {
	t.Helper()
	up := fakeupstream.New()
	t.Cleanup(up.Close)
	yaml := "server:\n  http_addr: 127.0.0.1:0\n  grpc_addr: 127.0.0.1:0\n  data_dir: " + t.TempDir() + "\n" + serverLines +
		"providers:\n  up:\n    type: openai\n    base_url: " + up.URL + "\n"
	path := filepath.Join(t.TempDir(), "c.yaml")
	require.NoError(t, os.WriteFile(path, []byte(yaml), 0o600))
	cfg, err := config.Load(path, func(string) (string, bool) { return "", false })
	require.NoError(t, err)
	a, err := app.Start(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Shutdown(context.Background()) })
	return a, up
}

// countingDialer counts the connections a client opens.
func countingDialer(n *atomic.Int32) grpc.DialOption {
	return grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
		n.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	})
}

// TestMaxConnectionAgeMakesTheClientReconnect: with server.max_connection_age set,
// a client calling steadily is sent GOAWAY and opens a new connection (where a
// load balancer or DNS may put it on another replica), and no call fails meanwhile;
// without it, one connection serves everything.
func TestMaxConnectionAgeMakesTheClientReconnect(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		lines     string
		moreThan1 bool
	}{
		{"aged out", "  max_connection_age: 200ms\n  max_connection_age_grace: 2s\n", true},
		{"default age", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, _ := startServer(t, tc.lines)
			var dials atomic.Int32
			c, err := switchyard.Dial(context.Background(), a.GRPCAddr(), switchyard.WithInsecure(),
				switchyard.WithDialOptions(countingDialer(&dials)))
			require.NoError(t, err)
			t.Cleanup(func() { c.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			deadline := time.Now().Add(1500 * time.Millisecond)
			for time.Now().Before(deadline) {
				_, err := c.Chat(ctx, req())
				require.NoError(t, err, "a call during a connection's ageing out fails")
				time.Sleep(20 * time.Millisecond)
			}
			if tc.moreThan1 {
				require.Greater(t, dials.Load(), int32(1), "the aged-out connection was replaced")
			} else {
				require.Equal(t, int32(1), dials.Load())
			}
		})
	}
}

// TestDialSpreadsCallsOverEveryResolvedAddress: the default policy is round_robin,
// so a name resolving to two replicas (as a headless service does) sends calls to
// both; pick_first sends them all to one.
func TestDialSpreadsCallsOverEveryResolvedAddress(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []switchyard.Option
		both bool
	}{
		{"default round_robin", nil, true},
		{"pick_first", []switchyard.Option{switchyard.WithLoadBalancing("pick_first")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a1, up1 := startServer(t, "")
			a2, up2 := startServer(t, "")
			r := manual.NewBuilderWithScheme("replicas" + tc.name[:4])
			r.InitialState(resolver.State{Addresses: []resolver.Address{{Addr: a1.GRPCAddr()}, {Addr: a2.GRPCAddr()}}})
			opts := append([]switchyard.Option{switchyard.WithInsecure(), switchyard.WithDialOptions(grpc.WithResolvers(r))}, tc.opts...)
			c, err := switchyard.Dial(context.Background(), r.Scheme()+":///switchyard", opts...)
			require.NoError(t, err)
			t.Cleanup(func() { c.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			for range 20 {
				_, err := c.Chat(ctx, req())
				require.NoError(t, err)
			}
			n1, n2 := len(up1.Requests()), len(up2.Requests())
			require.Equal(t, 20, n1+n2)
			if tc.both {
				require.Positive(t, n1)
				require.Positive(t, n2)
			} else {
				require.True(t, n1 == 0 || n2 == 0, "pick_first used one replica: %d/%d", n1, n2)
			}
		})
	}
}
