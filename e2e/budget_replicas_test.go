package e2e

import (
	"net/http"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	adminpb "github.com/switchyard/switchyard/gen/switchyard/admin/v1"
	"github.com/switchyard/switchyard/internal/fakeupstream"
	"github.com/switchyard/switchyard/internal/pgtest"
	"github.com/switchyard/switchyard/internal/redistest"
)

// A virtual key's budget holds across replicas sharing Redis, as its limits
// do: what it spent through one replica counts on the others (within
// redisstate.PushDelay). Their ledger is one Postgres: "spend by key and model"
// asked of either replica over gRPC is the same answer, every replica's calls.
func TestBudgetHoldsAcrossReplicas(t *testing.T) {
	t.Parallel()
	rsrv := redistest.New(t)
	pg := pgtest.New(t)
	up := fakeupstream.New()
	t.Cleanup(up.Close)
	shared := withYAML(usageYAML + "usage:\n  store: postgres\n  dsn: " + pg.DSN() + "\n" +
		"state:\n  redis:\n    url: " + rsrv.URL() + "\n    prefix: \"" + t.Name() + ":\"\n")
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
	// A replica's spend reaches Redis off the request's path, within
	// redisstate.PushDelay: once both calls' spend is there, every replica
	// refuses the next call (not one that its own spend alone would refuse).
	rdb := goredis.NewClient(&goredis.Options{Addr: rsrv.Addr()})
	defer rdb.Close()
	require.Eventually(t, func() bool {
		keys, err := rdb.Keys(t.Context(), t.Name()+":spend:*:day:*").Result()
		if err != nil || len(keys) != 1 {
			return false
		}
		v, err := rdb.Get(t.Context(), keys[0]).Float64()
		return err == nil && v >= 0.00005-1e-12
	}, 5*time.Second, 10*time.Millisecond, "both calls' spend reaches Redis")
	for name, g := range map[string]*gateway{"a": a, "b": b} {
		resp := post(t, g.base+"/chat/completions", chatBody+"}", auth...)
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "replica %s counts what the other spent", name)
		require.Equal(t, "insufficient_quota", readError(t, resp).Error.Type)
	}

	waitRecords(t, a, 4)
	q := &adminpb.QueryUsageRequest{Since: "24h", GroupBy: []string{"key", "model"}}
	for name, g := range map[string]*gateway{"a": a, "b": b} {
		out, err := adminpb.NewAdminServiceClient(g.conn).QueryUsage(withKey("sk-admin"), q)
		require.NoError(t, err, name)
		require.Len(t, out.Groups, 1, "replica %s: one key, one model", name)
		grp := out.Groups[0]
		require.EqualValues(t, 4, grp.Requests, "replica %s sees both replicas' calls", name)
		require.EqualValues(t, 2, grp.Errors, "replica %s: the two refusals", name)
		require.Zero(t, grp.UnpricedRequests, "replica %s: refusals were billed nothing", name)
		require.InDelta(t, 2*0.000025, grp.CostUsd, 1e-12, "replica %s", name)
	}
}
