package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// applyEnv adds providers found in the environment and sets global resilience
// defaults from the variables SPEC §5 lists. YAML values win over the environment.
func applyEnv(cfg *Config, env func(string) (string, bool)) error {
	get := func(k string) string { v, _ := env(k); return strings.TrimSpace(v) }
	if v := get("SWITCHYARD_MASTER_KEY"); v != "" && cfg.Server.MasterKey == "" {
		cfg.Server.MasterKey = Secret(v)
	}
	if v := get("SWITCHYARD_ADMIN_KEY"); v != "" && cfg.Server.AdminKey == "" {
		cfg.Server.AdminKey = Secret(v)
	}
	if v := get("SWITCHYARD_DATA_DIR"); v != "" && cfg.Server.DataDir == "" {
		cfg.Server.DataDir = v
	}
	if cfg.Providers == nil {
		cfg.Providers = map[string]*Provider{}
	}
	addProvider := func(name string, p *Provider) {
		if _, ok := cfg.Providers[name]; !ok {
			cfg.Providers[name] = p
		}
	}
	if key := get("OPENAI_API_KEY"); key != "" {
		base := get("OPENAI_BASE_URL")
		if base == "" {
			base = "https://api.openai.com/v1"
		}
		addProvider("openai", &Provider{Type: "openai", BaseURL: base, APIKey: Secret(key)})
	}
	if base := get("OLLAMA_BASE_URL"); base != "" {
		addProvider("ollama", &Provider{Type: "ollama", BaseURL: base})
	}
	if base := get("VLLM_BASE_URL"); base != "" {
		addProvider("vllm", &Provider{Type: "vllm", BaseURL: base})
	}

	var errs []string
	r, cb := &cfg.Resilience.Retry, &cfg.Resilience.CircuitBreaker
	setInt := func(k string, dst **int) { setFrom(get(k), k, dst, strconv.Atoi, "an integer", &errs) }
	setFloat := func(k string, dst **float64) {
		setFrom(get(k), k, dst, func(v string) (float64, error) { return strconv.ParseFloat(v, 64) }, "a number", &errs)
	}
	setDur := func(k string, dst **time.Duration) {
		setFrom(get(k), k, dst, time.ParseDuration, "a duration (e.g. 500ms, 2s)", &errs)
	}
	setBool := func(k string, dst **bool) { setFrom(get(k), k, dst, strconv.ParseBool, "a boolean", &errs) }
	setList := func(k string, dst **StatusList) {
		if v, ok := env(k); ok && *dst == nil {
			l := StatusList{}
			for _, s := range strings.Split(v, ",") {
				if s = strings.TrimSpace(s); s != "" {
					l = append(l, s)
				}
			}
			*dst = &l
		}
	}
	setList("RETRY_ON_STATUSES", &r.RetryOnStatuses)
	setInt("RETRY_MAX_RETRIES", &r.MaxRetries)
	setDur("RETRY_INITIAL_BACKOFF", &r.InitialBackoff)
	setDur("RETRY_MAX_BACKOFF", &r.MaxBackoff)
	setFloat("RETRY_BACKOFF_FACTOR", &r.BackoffFactor)
	setFloat("RETRY_JITTER_FACTOR", &r.JitterFactor)
	setList("CIRCUIT_BREAKER_FAILURE_ON_STATUSES", &cb.FailureOnStatuses)
	if v := get("CIRCUIT_BREAKER_SCOPE"); v != "" && cb.Scope == nil {
		cb.Scope = &v
	}
	setBool("CIRCUIT_BREAKER_ENABLED", &cb.Enabled)
	setInt("CIRCUIT_BREAKER_FAILURE_THRESHOLD", &cb.FailureThreshold)
	setInt("CIRCUIT_BREAKER_SUCCESS_THRESHOLD", &cb.SuccessThreshold)
	setDur("CIRCUIT_BREAKER_TIMEOUT", &cb.Timeout)
	setDur("CIRCUIT_BREAKER_SLOW_CALL_THRESHOLD", &cb.SlowCallThreshold)
	setBool("FAILOVER_ENABLED", &cfg.Failover.Enabled)
	if len(errs) > 0 {
		return fmt.Errorf("environment: %s", strings.Join(errs, "; "))
	}
	return nil
}

// setFrom sets *dst from the variable k's value v, unless v is empty or the YAML
// already set it; a value that does not parse is reported in errs.
func setFrom[T any](v, k string, dst **T, parse func(string) (T, error), what string, errs *[]string) {
	if v == "" || *dst != nil {
		return
	}
	x, err := parse(v)
	if err != nil {
		*errs = append(*errs, fmt.Sprintf("%s=%q: not %s", k, v, what))
		return
	}
	*dst = &x
}
