package config_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/config"
)

func TestStateRedisSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, yaml string
		env        map[string]string
		wantErr    string
		check      func(t *testing.T, r config.Redis)
	}{
		{name: "embedded by default", check: func(t *testing.T, r config.Redis) {
			require.False(t, r.Enabled())
			require.Equal(t, "allow", r.OnError)
			require.Equal(t, 250*time.Millisecond, r.Timeout)
			require.Equal(t, 10*time.Second, r.ResyncInterval)
			require.Equal(t, "switchyard:", r.Prefix)
		}},
		{name: "url and policy from the file", yaml: "state:\n  redis:\n    url: rediss://u:pw@redis:6380/2\n    on_error: deny\n",
			check: func(t *testing.T, r config.Redis) {
				require.True(t, r.Enabled())
				require.Equal(t, config.Secret("rediss://u:pw@redis:6380/2"), r.URL)
				require.Equal(t, "deny", r.OnError)
				require.Equal(t, "[redacted]", r.URL.String(), "a URL may carry a password")
			}},
		{name: "url from the environment", env: map[string]string{"SWITCHYARD_REDIS_URL": "redis://127.0.0.1:6379"},
			check: func(t *testing.T, r config.Redis) { require.Equal(t, config.Secret("redis://127.0.0.1:6379"), r.URL) }},
		{name: "the file wins over the environment", yaml: "state:\n  redis:\n    url: redis://file:6379\n",
			env:   map[string]string{"SWITCHYARD_REDIS_URL": "redis://env:6379"},
			check: func(t *testing.T, r config.Redis) { require.Equal(t, config.Secret("redis://file:6379"), r.URL) }},
		{name: "not a redis scheme", yaml: "state:\n  redis:\n    url: http://redis:6379\n", wantErr: `state.redis.url (line 3): scheme "http"`},
		{name: "no host", yaml: "state:\n  redis:\n    url: redis://\n", wantErr: "state.redis.url (line 3): has no host"},
		{name: "unknown policy", yaml: "state:\n  redis:\n    url: redis://r:6379\n    on_error: retry\n", wantErr: `state.redis.on_error (line 4): must be allow or deny; got "retry"`},
		{name: "negative timeout", yaml: "state:\n  redis:\n    timeout: -1s\n", wantErr: "state.redis.timeout (line 3): must not be negative"},
		{name: "unknown key", yaml: "state:\n  redis:\n    uri: redis://r:6379\n", wantErr: "uri"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := config.Load(writeFile(t, tc.yaml), envOf(tc.env))
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				require.NotContains(t, err.Error(), "pw")
				return
			}
			require.NoError(t, err)
			tc.check(t, cfg.State.Redis)
		})
	}
}
