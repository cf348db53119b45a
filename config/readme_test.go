package config_test

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/keys"
	"github.com/switchyard/switchyard/providers/simulator"
	"github.com/switchyard/switchyard/resilience"
	"github.com/switchyard/switchyard/store"
	"github.com/switchyard/switchyard/usage"
)

// TestReadmeSettingsTableMatchesCode keeps the README's defaults honest.
func TestReadmeSettingsTableMatchesCode(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	text := string(raw)
	start := strings.Index(text, "<!-- settings-table -->")
	end := strings.Index(text, "<!-- /settings-table -->")
	require.True(t, start >= 0 && end > start, "README settings table markers")
	documented, meaning := map[string]string{}, map[string]string{}
	for _, line := range strings.Split(text[start:end], "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		key := strings.Trim(strings.TrimSpace(cells[1]), "`")
		documented[key] = strings.Trim(strings.TrimSpace(cells[2]), "`")
		meaning[key] = strings.Join(cells[3:], "|")
	}
	// Every setting of these blocks has a row: a new one cannot be left out.
	for prefix, block := range map[string]any{"server.": config.Server{}, "providers.*.simulator.": config.Simulator{}} {
		for _, name := range yamlKeys(block) {
			_, ok := documented[prefix+name]
			require.True(t, ok, "the README's settings table lacks %s%s", prefix, name)
		}
	}
	for _, file := range []string{store.FileName, keys.FileName, usage.FileName} {
		require.Contains(t, meaning["server.data_dir"], file, "server.data_dir's row names what it holds")
	}
	r, b := resilience.DefaultRetry(), resilience.DefaultBreaker()
	code := map[string]string{
		"server.http_addr":                               config.DefaultHTTPAddr,
		"server.master_key":                              "",
		"server.admin_key":                               "",
		"server.allow_unauthenticated":                   fmt.Sprint(config.Server{}.AllowUnauthenticated),
		"server.grpc_addr":                               config.DefaultGRPCAddr,
		"server.max_body_bytes":                          fmt.Sprint(config.DefaultMaxBodyBytes),
		"server.stream_idle_timeout":                     config.DefaultStreamIdleTimeout.String(),
		"server.data_dir":                                config.DefaultDataDir,
		"server.recheck_interval":                        config.DefaultRecheckInterval.String(),
		"server.drain_timeout":                           config.DefaultDrainTimeout.String(),
		"server.drain_delay":                             time.Duration(0).String(),
		"server.read_timeout":                            config.DefaultReadTimeout.String(),
		"server.idle_timeout":                            config.DefaultIdleTimeout.String(),
		"server.max_connection_age":                      config.DefaultMaxConnectionAge.String(),
		"server.max_connection_age_grace":                config.DefaultMaxConnectionAgeGrace.String(),
		"state.redis.url":                                "",
		"state.redis.on_error":                           config.DefaultRedisOnError,
		"state.redis.timeout":                            config.DefaultRedisTimeout.String(),
		"state.redis.resync_interval":                    config.DefaultRedisResyncInterval.String(),
		"state.redis.prefix":                             config.DefaultRedisPrefix,
		"usage.store":                                    config.DefaultUsageStore,
		"usage.dsn":                                      "",
		"usage.queue_size":                               fmt.Sprint(config.DefaultUsageQueueSize),
		"usage.batch_size":                               fmt.Sprint(config.DefaultUsageBatchSize),
		"usage.flush_interval":                           config.DefaultUsageFlushInterval.String(),
		"usage.retention":                                time.Duration(0).String(),
		"pricing":                                        "",
		"pricing_file":                                   "",
		"providers.*.connect_timeout":                    config.DefaultConnectTimeout.String(),
		"providers.*.response_header_timeout":            config.DefaultResponseHeaderTimeout.String(),
		"providers.*.timeout":                            config.DefaultProviderTimeout.String(),
		"providers.*.api_version":                        config.DefaultAzureAPIVersion,
		"server.key_metrics":                             fmt.Sprint(config.Server{}.KeyMetricsOn()),
		"server.heap_floor_bytes":                        fmt.Sprint(config.Server{}.HeapFloor()),
		"providers.*.limits.rpm":                         fmt.Sprint(config.ProviderLimits{}.RPM),
		"providers.*.limits.tpm":                         fmt.Sprint(config.ProviderLimits{}.TPM),
		"providers.*.limits.max_concurrency":             fmt.Sprint(config.ProviderLimits{}.MaxConcurrency),
		"providers.*.default_max_tokens":                 fmt.Sprint(config.DefaultAnthropicMaxTokens),
		"providers.*.simulator.time_to_first_token":      time.Duration(0).String(),
		"providers.*.simulator.token_delay":              time.Duration(0).String(),
		"providers.*.simulator.tokens":                   fmt.Sprint(config.DefaultSimulatorTokens),
		"providers.*.simulator.dimensions":               fmt.Sprint(simulator.DefaultDimensions),
		"resilience.retry.max_retries":                   fmt.Sprint(r.MaxRetries),
		"resilience.retry.initial_backoff":               r.InitialBackoff.String(),
		"resilience.retry.max_backoff":                   r.MaxBackoff.String(),
		"resilience.retry.backoff_factor":                fmt.Sprint(r.BackoffFactor),
		"resilience.retry.jitter_factor":                 fmt.Sprint(r.JitterFactor),
		"resilience.retry.retry_on_statuses":             strings.Join(resilience.DefaultRetryStatuses, ","),
		"resilience.circuit_breaker.enabled":             fmt.Sprint(b.Enabled),
		"resilience.circuit_breaker.scope":               string(b.Scope),
		"resilience.circuit_breaker.failure_on_statuses": strings.Join(resilience.DefaultFailureStatuses, ","),
		"resilience.circuit_breaker.failure_threshold":   fmt.Sprint(b.FailureThreshold),
		"resilience.circuit_breaker.success_threshold":   fmt.Sprint(b.SuccessThreshold),
		"resilience.circuit_breaker.timeout":             b.Timeout.String(),
		"resilience.circuit_breaker.slow_call_threshold": b.SlowCallThreshold.String(),
		"resilience.first_token_timeout":                 resilience.DefaultFirstTokenTimeout.String(),
	}
	require.Equal(t, code, documented)
}

// yamlKeys are the YAML names of a config block's fields.
func yamlKeys(block any) []string {
	var names []string
	typ := reflect.TypeOf(block)
	for i := range typ.NumField() {
		f := typ.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}

// TestReadmeYAMLExamplesLoad: the README's provider and virtual-model examples,
// together, are a valid config.
func TestReadmeYAMLExamplesLoad(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	var blocks []string
	for _, part := range strings.Split(string(raw), "```yaml\n")[1:] {
		blocks = append(blocks, part[:strings.Index(part, "```")])
	}
	require.GreaterOrEqual(t, len(blocks), 2)
	text := strings.Join(blocks, "\n")
	var cfg config.Config
	env := func(k string) (string, bool) {
		v, ok := map[string]string{"OPENAI_API_KEY": "sk", "AZURE_OPENAI_API_KEY": "az", "ANTHROPIC_API_KEY": "sk-ant"}[k]
		return v, ok
	}
	require.NoError(t, config.Parse([]byte(text), env, &cfg))
	require.NoError(t, cfg.Validate())
	require.Len(t, cfg.VirtualModels, 1)
}

// TestReadmeConfigErrorExample: the config error the README shows is what the
// loader really prints for the file shown (main prefixes "switchyard: ").
func TestReadmeConfigErrorExample(t *testing.T) {
	raw, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	text := string(raw)
	start := strings.Index(text, "<!-- config-error-example -->")
	end := strings.Index(text, "<!-- /config-error-example -->")
	require.True(t, start >= 0 && end > start, "README config error example markers")
	var file, printed []string
	var into *[]string
	for _, line := range strings.Split(text[start:end], "\n") {
		switch {
		case line == "$ cat switchyard.yaml":
			into = &file
		case line == "$ switchyard --config switchyard.yaml":
			into = &printed
		case strings.HasPrefix(line, "```"):
			into = nil
		case into != nil:
			*into = append(*into, line)
		}
	}
	require.NotEmpty(t, file)
	require.Len(t, printed, 1)
	t.Chdir(t.TempDir())
	require.NoError(t, os.WriteFile("switchyard.yaml", []byte(strings.Join(file, "\n")+"\n"), 0o600))
	_, err = config.Load("switchyard.yaml", func(string) (string, bool) { return "", false })
	require.Error(t, err)
	require.Equal(t, printed[0], "switchyard: "+err.Error())
}
