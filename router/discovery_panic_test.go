package router

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
)

// panickingModels is a provider whose model list panics from its second call.
type panickingModels struct{ fakeProvider }

func (p *panickingModels) Models(ctx context.Context) ([]string, error) {
	p.mu.Lock()
	n := len(*p.calls)
	*p.calls = append(*p.calls, "models")
	p.mu.Unlock()
	if n > 0 {
		panic("odd model list")
	}
	return p.models, nil
}

// Discovery runs in goroutines of its own: a provider whose model listing
// panics fails that discovery (logged, the last good list kept), and the
// process goes on.
func TestADiscoveryThatPanicsKeepsTheLastList(t *testing.T) {
	var calls, keys []string
	p := &panickingModels{fakeProvider{name: "a", models: []string{"m1"}, calls: &calls, keys: &keys}}
	var logs bytes.Buffer
	r := New(slog.New(slog.NewTextHandler(&logs, nil)), []Target{{Provider: p}})
	r.Discover(context.Background(), 0)
	route, err := r.reg.resolve("m1")
	require.NoError(t, err)

	r.Discover(context.Background(), 0)
	require.Contains(t, logs.String(), "model discovery panicked: odd model list")
	again, err := r.reg.resolve("m1")
	require.NoError(t, err, "the last good list is kept")
	require.Equal(t, route, again)
}
