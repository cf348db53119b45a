package config_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/resilience"
)

func envOf(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "switchyard.yaml")
	require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
	return p
}

// The worked example of the reference docs: effective settings per provider.
func TestSeedExampleEffectiveSettings(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load("testdata/seed.yaml", envOf(nil))
	require.NoError(t, err)
	want := map[string]struct {
		retries   int
		enabled   bool
		threshold int
		timeout   time.Duration
	}{
		"anthropic": {5, true, 3, 15 * time.Second},
		"ollama":    {2, true, 10, 5 * time.Second},
		"vllm":      {2, false, 3, 15 * time.Second},
	}
	for name, w := range want {
		t.Run(name, func(t *testing.T) {
			r, b := config.ResolveResilience(cfg.Resilience, cfg.Providers[name].Resilience)
			require.Equal(t, w.retries, r.MaxRetries)
			require.Equal(t, w.enabled, b.Enabled)
			require.Equal(t, w.threshold, b.FailureThreshold)
			require.Equal(t, w.timeout, b.Timeout)
			require.Equal(t, 500*time.Millisecond, r.InitialBackoff)
			require.Equal(t, 1, b.SuccessThreshold)
		})
	}
	require.Equal(t, "http://localhost:11434/v1", cfg.Providers["ollama"].BaseURL)
}

func TestSeedFailoverExampleLoads(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load("testdata/seed-failover.yaml", envOf(nil))
	require.NoError(t, err)
	require.Len(t, cfg.VirtualModels, 2)
	require.True(t, *cfg.VirtualModels[0].Failover.Enabled)
	_, b := config.ResolveResilience(cfg.Resilience, cfg.Providers["cloudflare"].Resilience)
	require.Equal(t, resilience.ScopeModel, b.Scope)
	require.True(t, b.FailureOnStatuses.Has(503))
	require.True(t, b.FailureOnStatuses.Has(429))
	require.False(t, b.FailureOnStatuses.Has(404))
}

func TestDefaultsWithoutFileUseSimulator(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load("", envOf(nil))
	require.NoError(t, err)
	require.Equal(t, config.DefaultHTTPAddr, cfg.Server.HTTPAddr)
	require.Equal(t, config.DefaultGRPCAddr, cfg.Server.GRPCAddr)
	require.Len(t, cfg.Providers, 1)
	require.Equal(t, "simulator", cfg.Providers[config.SimulatorName].Type)
	r, b := config.ResolveResilience(cfg.Resilience, cfg.Providers[config.SimulatorName].Resilience)
	require.Equal(t, resilience.DefaultRetry().MaxRetries, r.MaxRetries)
	require.Equal(t, resilience.DefaultBreaker().Timeout, b.Timeout)
}

func TestEnvironmentProvidersAndDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load("", envOf(map[string]string{
		"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1",
		"OLLAMA_BASE_URL": "http://127.0.0.1:2/v1", "RETRY_MAX_RETRIES": "7",
		"CIRCUIT_BREAKER_FAILURE_ON_STATUSES": "5xx", "RETRY_ON_STATUSES": "",
	}))
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:1/v1", cfg.Providers["openai"].BaseURL)
	require.Equal(t, config.Secret("sk-test"), cfg.Providers["openai"].APIKey)
	require.Equal(t, "ollama", cfg.Providers["ollama"].Type)
	require.NotContains(t, cfg.Providers, config.SimulatorName)
	r, b := config.ResolveResilience(cfg.Resilience, config.Resilience{})
	require.Equal(t, 7, r.MaxRetries)
	require.False(t, r.RetryOnStatuses.Has(429), "an empty list disables status retries")
	require.False(t, b.FailureOnStatuses.Has(429))
}

func TestYAMLBeatsEnvironment(t *testing.T) {
	t.Parallel()
	p := writeFile(t, "resilience:\n  retry:\n    max_retries: 1\n")
	cfg, err := config.Load(p, envOf(map[string]string{"RETRY_MAX_RETRIES": "9", "RETRY_MAX_BACKOFF": "3s"}))
	require.NoError(t, err)
	r, _ := config.ResolveResilience(cfg.Resilience, config.Resilience{})
	require.Equal(t, 1, r.MaxRetries)
	require.Equal(t, 3*time.Second, r.MaxBackoff)
}

func TestExpansion(t *testing.T) {
	t.Parallel()
	env := envOf(map[string]string{"A": "x", "EMPTY": ""})
	require.Equal(t, "x-d-e-", config.Expand("${A}-${B:-d}-${EMPTY:-e}-${C}", env))
}

func TestErrorsNameTheKeyPath(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, text, want string }{
		{"misspelt server key", "server:\n  http_adr: x\n", "server.http_adr"},
		{"misspelt provider key", "providers:\n  a:\n    type: openai\n    modles: [x]\n", "providers.a.modles"},
		{"unknown provider type", "providers:\n  a:\n    type: nope\n", "providers.a.type (line 3): unknown type"},
		{"bad retry backoff", "resilience:\n  retry:\n    initial_backoff: soon\n", "resilience.retry.initial_backoff"},
		{"bad retry status", "resilience:\n  retry:\n    retry_on_statuses: [429, 6xx]\n", "resilience.retry.retry_on_statuses"},
		{"unknown breaker scope", "resilience:\n  circuit_breaker:\n    scope: region\n", "resilience.circuit_breaker.scope"},
		{"empty targets", "virtual_models:\n  - source: v\n    targets: []\n", "virtual_models[0].targets"},
		{"unknown target provider", "virtual_models:\n  - source: v\n    targets:\n      - model: no/m\n", "unknown provider \"no\""},
		{"target without provider", "virtual_models:\n  - source: v\n    targets: [{model: other-virtual}]\n", "must be provider/model"},
		{"misspelt failover key", "virtual_models:\n  - source: v\n    failover: {enabld: true}\n    targets: [{model: simulator/x}]\n", "virtual_models[0].failover.enabld"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := config.Load(writeFile(t, tc.text), envOf(nil))
			require.ErrorContains(t, err, tc.want, tc.text)
		})
	}
}

func TestEveryProblemReportedAtOnce(t *testing.T) {
	t.Parallel()
	text := "resilience:\n  retry:\n    max_retries: -1\n    jitter_factor: 2\n  circuit_breaker:\n    scope: x\n"
	_, err := config.Load(writeFile(t, text), envOf(nil))
	require.ErrorContains(t, err, "max_retries")
	require.ErrorContains(t, err, "jitter_factor")
	require.ErrorContains(t, err, "scope")
}

func TestSecretsRedacted(t *testing.T) {
	t.Parallel()
	s := config.Secret("sk-live")
	require.Equal(t, "[redacted]", s.String())
	require.NotContains(t, fmtAll(s), "sk-live")
}

func TestBadEnvironmentValuesFailLoading(t *testing.T) {
	t.Parallel()
	_, err := config.Load("", envOf(map[string]string{"RETRY_MAX_RETRIES": "many", "CIRCUIT_BREAKER_TIMEOUT": "soon",
		"CIRCUIT_BREAKER_ENABLED": "perhaps", "RETRY_JITTER_FACTOR": "x"}))
	for _, want := range []string{"RETRY_MAX_RETRIES", "CIRCUIT_BREAKER_TIMEOUT", "CIRCUIT_BREAKER_ENABLED", "RETRY_JITTER_FACTOR"} {
		require.ErrorContains(t, err, want)
	}
}

// usage.retention is 0 (keep every record) or at least 32 days: a monthly
// budget's spend is read back from the records at start.
func TestUsageRetention(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, value string
		want        time.Duration
		err         string
	}{
		{"unset keeps every record", "", 0, ""},
		{"32 days", "768h", 768 * time.Hour, ""},
		{"31 days leaves no margin", "744h", 0, "usage.retention (line 3): must be 0 (keep every record) or at least 768h0m0s"},
		{"90 days", "2160h", 2160 * time.Hour, ""},
		{"a week is shorter than a month", "168h", 0, "usage.retention (line 3): must be 0 (keep every record) or at least 768h0m0s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			text := "usage:\n  store: sqlite\n"
			if tc.value != "" {
				text += "  retention: " + tc.value + "\n"
			}
			cfg, err := config.Load(writeFile(t, text), envOf(nil))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, cfg.Usage.Retention)
		})
	}
}

// TestAWrongKindDoesNotHideTheOtherProblems: a value of the wrong kind is
// reported with the file's other problems, all at once, not alone (a fix of it
// then met the next problem on the next start).
func TestAWrongKindDoesNotHideTheOtherProblems(t *testing.T) {
	t.Parallel()
	_, err := config.Load(writeFile(t, "server:\n  max_body_bytes: lots\n  heap_floor_bytes: -1\nusage:\n  batch_size: -1\n"), envOf(nil))
	require.Error(t, err)
	for _, key := range []string{"server.max_body_bytes (line 2)", "server.heap_floor_bytes (line 3)", "usage.batch_size (line 5)"} {
		require.Contains(t, err.Error(), key)
	}
	require.Contains(t, err.Error(), "3 problems")
}
