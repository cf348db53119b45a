package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/fakeupstream"
	"github.com/switchyard/switchyard/internal/redistest"
)

// A virtual key's budget holds across replicas sharing Redis, as its limits
// do: what it spent through one replica counts on the others.
func TestBudgetHoldsAcrossReplicas(t *testing.T) {
	t.Parallel()
	redis := redistest.New(t)
	up := fakeupstream.New()
	t.Cleanup(up.Close)
	shared := withYAML(usageYAML + "state:\n  redis:\n    url: " + redis.URL() + "\n    prefix: \"" + t.Name() + ":\"\n")
	a, b := startWith(t, up, keysYAML, shared), startWith(t, up, keysYAML, shared)
	_, secret := createKey(t, a, `{"name":"capped","models":["*"],"budget_usd":0.00005,"budget_period":"day"}`)
	auth := []string{"Authorization", "Bearer " + secret}
	require.Eventually(t, func() bool { // the key reaches b through Redis (listing models spends nothing)
		req, _ := http.NewRequest(http.MethodGet, b.base+"/models", nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 5*time.Second, 20*time.Millisecond)
	// Each call costs half the budget (fakeCost): one through each replica spends it.
	require.Equal(t, http.StatusOK, post(t, a.base+"/chat/completions", chatBody+"}", auth...).StatusCode)
	require.Equal(t, http.StatusOK, post(t, b.base+"/chat/completions", chatBody+"}", auth...).StatusCode)
	for name, g := range map[string]*gateway{"a": a, "b": b} {
		resp := post(t, g.base+"/chat/completions", chatBody+"}", auth...)
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "replica %s counts what the other spent", name)
		require.Equal(t, "insufficient_quota", readError(t, resp).Error.Type)
	}
}
