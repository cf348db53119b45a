package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/config"
)

func TestProviderLimits(t *testing.T) {
	t.Parallel()
	t.Run("parsed, the account's and per model", func(t *testing.T) {
		t.Parallel()
		path := writeFile(t, "providers:\n  up:\n    type: openai\n    base_url: http://127.0.0.1:1/v1\n"+
			"    limits: {rpm: 500, tpm: 200000, max_concurrency: 8, models: {gpt-4o: {rpm: 10}}}\n")
		cfg, err := config.Load(path, envOf(nil))
		require.NoError(t, err)
		l := cfg.Providers["up"].Limits
		require.Equal(t, config.RateLimits{RPM: 500, TPM: 200000, MaxConcurrency: 8}, l.Account())
		require.Equal(t, config.RateLimits{RPM: 10}, l.Models["gpt-4o"])
		require.True(t, cfg.Server.KeyMetricsOn(), "key metrics default on")
	})
	tests := []struct{ name, limits, want string }{
		{"negative rpm", "{rpm: -1}", "providers.up.limits.rpm"},
		{"negative model tpm", "{models: {m: {tpm: -5}}}", "providers.up.limits.models.m.tpm"},
		{"negative concurrency", "{max_concurrency: -2}", "providers.up.limits.max_concurrency"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			msg := loadMessage(t, "providers:\n  up:\n    type: openai\n    base_url: http://127.0.0.1:1/v1\n    limits: "+tt.limits+"\n", nil)
			require.Contains(t, msg, tt.want)
			require.Contains(t, msg, "must not be negative")
		})
	}
	t.Run("key metrics can be turned off", func(t *testing.T) {
		t.Parallel()
		cfg, err := config.Load(writeFile(t, "server:\n  key_metrics: false\n"), envOf(nil))
		require.NoError(t, err)
		require.False(t, cfg.Server.KeyMetricsOn())
	})
}

func TestHeapFloor(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, yaml string
		want       int64
	}{
		{"unset: the default", "server: {}\n", config.DefaultHeapFloorBytes},
		{"0: off", "server:\n  heap_floor_bytes: 0\n", 0},
		{"set", "server:\n  heap_floor_bytes: 67108864\n", 64 << 20},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := config.Load(writeFile(t, tc.yaml), envOf(nil))
			require.NoError(t, err)
			require.Equal(t, tc.want, cfg.Server.HeapFloor())
		})
	}
}
