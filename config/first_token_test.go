package config_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/resilience"
)

// TestFirstTokenTimeoutInherits: resilience.first_token_timeout is inherited like
// the rest of the block (provider → global → built-in default), 0 turns it off,
// and a negative value is rejected.
func TestFirstTokenTimeoutInherits(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, global, a string
		wantA, wantB    time.Duration
	}{
		{"default", "", "", resilience.DefaultFirstTokenTimeout, resilience.DefaultFirstTokenTimeout},
		{"global", "resilience:\n  first_token_timeout: 20s\n", "", 20 * time.Second, 20 * time.Second},
		{"provider over global", "resilience:\n  first_token_timeout: 20s\n", "    resilience:\n      first_token_timeout: 5s\n",
			5 * time.Second, 20 * time.Second},
		{"off for one provider", "", "    resilience:\n      first_token_timeout: 0s\n", 0, resilience.DefaultFirstTokenTimeout},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			text := tc.global + "providers:\n  a:\n    type: openai\n    api_key: k\n" + tc.a + "  b:\n    type: openai\n    api_key: k\n"
			cfg, err := config.Load(writeFile(t, text), envOf(nil))
			require.NoError(t, err)
			require.Equal(t, tc.wantA, config.ResolveFirstTokenTimeout(cfg.Resilience, cfg.Providers["a"].Resilience))
			require.Equal(t, tc.wantB, config.ResolveFirstTokenTimeout(cfg.Resilience, cfg.Providers["b"].Resilience))
		})
	}
	require.Contains(t, loadMessage(t, "resilience:\n  first_token_timeout: -1s\n", nil), "resilience.first_token_timeout")
	require.Contains(t, loadMessage(t, "server:\n  stream_first_event_timeout: 1m\n", nil), "stream_first_event_timeout",
		"the old key is gone")
}

// TestHedgeAfterSetting: hedge_after is a virtual model duration, off when unset,
// and may not be negative.
func TestHedgeAfterSetting(t *testing.T) {
	t.Parallel()
	const head = "providers:\n  simulator:\n    type: simulator\nvirtual_models:\n  - source: v\n    targets: [{model: simulator/x}]\n"
	cfg, err := config.Load(writeFile(t, head), envOf(nil))
	require.NoError(t, err)
	require.Nil(t, cfg.VirtualModels[0].HedgeAfter)
	cfg, err = config.Load(writeFile(t, head+"    hedge_after: 2s\n"), envOf(nil))
	require.NoError(t, err)
	require.Equal(t, 2*time.Second, *cfg.VirtualModels[0].HedgeAfter)
	require.Contains(t, loadMessage(t, head+"    hedge_after: -2s\n", nil), "virtual_models[0].hedge_after")
}
