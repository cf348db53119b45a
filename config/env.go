package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// applyEnv adds providers found in the environment and sets global resilience
// defaults from the variables SPEC §5 lists. YAML values win over the environment.
// It returns the key path each variable set, and the values that do not parse.
func applyEnv(cfg *Config, env func(string) (string, bool)) (map[string]string, []*Error) {
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
	applyStateEnv(&cfg.State, get)
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
	if key := get("ANTHROPIC_API_KEY"); key != "" {
		addProvider("anthropic", &Provider{Type: "anthropic", APIKey: Secret(key)})
	}
	if base := get("OLLAMA_BASE_URL"); base != "" {
		addProvider("ollama", &Provider{Type: "ollama", BaseURL: base})
	}
	if base := get("VLLM_BASE_URL"); base != "" {
		addProvider("vllm", &Provider{Type: "vllm", BaseURL: base})
	}
	cfg.envWarnings = azureAlone(cfg.Providers, get)

	var errs []*Error
	origins := map[string]string{}
	// ANTHROPIC_BASE_URL is the default base_url of every anthropic provider, as it
	// is for Anthropic's own SDKs (a base_url in the file wins).
	if base := get("ANTHROPIC_BASE_URL"); base != "" {
		for name, p := range cfg.Providers {
			if p != nil && p.Type == "anthropic" && p.BaseURL == "" {
				p.BaseURL = base
				origins["providers."+name+".base_url"] = "ANTHROPIC_BASE_URL"
			}
		}
	}
	r, cb := &cfg.Resilience.Retry, &cfg.Resilience.CircuitBreaker
	set := func(k, path string, ok bool) {
		if ok {
			origins[path] = k
		}
	}
	setInt := func(k, path string, dst **int) {
		set(k, path, setFrom(get(k), k, dst, strconv.Atoi, "a whole number, such as 3", &errs))
	}
	setFloat := func(k, path string, dst **float64) {
		set(k, path, setFrom(get(k), k, dst, func(v string) (float64, error) { return strconv.ParseFloat(v, 64) },
			"a number, such as 0.5", &errs))
	}
	setDur := func(k, path string, dst **time.Duration) {
		set(k, path, setFrom(get(k), k, dst, time.ParseDuration, "a duration such as 30s, 500ms or 2m", &errs))
	}
	setBool := func(k, path string, dst **bool) {
		set(k, path, setFrom(get(k), k, dst, strconv.ParseBool, "true or false", &errs))
	}
	setList := func(k, path string, dst **StatusList) {
		if v, ok := env(k); ok && *dst == nil {
			origins[path] = k
			l := StatusList{}
			for _, s := range strings.Split(v, ",") {
				if s = strings.TrimSpace(s); s != "" {
					l = append(l, s)
				}
			}
			*dst = &l
		}
	}
	setList("RETRY_ON_STATUSES", "resilience.retry.retry_on_statuses", &r.RetryOnStatuses)
	setInt("RETRY_MAX_RETRIES", "resilience.retry.max_retries", &r.MaxRetries)
	setDur("RETRY_INITIAL_BACKOFF", "resilience.retry.initial_backoff", &r.InitialBackoff)
	setDur("RETRY_MAX_BACKOFF", "resilience.retry.max_backoff", &r.MaxBackoff)
	setFloat("RETRY_BACKOFF_FACTOR", "resilience.retry.backoff_factor", &r.BackoffFactor)
	setFloat("RETRY_JITTER_FACTOR", "resilience.retry.jitter_factor", &r.JitterFactor)
	setList("CIRCUIT_BREAKER_FAILURE_ON_STATUSES", "resilience.circuit_breaker.failure_on_statuses", &cb.FailureOnStatuses)
	if v := get("CIRCUIT_BREAKER_SCOPE"); v != "" && cb.Scope == nil {
		cb.Scope = &v
		origins["resilience.circuit_breaker.scope"] = "CIRCUIT_BREAKER_SCOPE"
	}
	setBool("CIRCUIT_BREAKER_ENABLED", "resilience.circuit_breaker.enabled", &cb.Enabled)
	setInt("CIRCUIT_BREAKER_FAILURE_THRESHOLD", "resilience.circuit_breaker.failure_threshold", &cb.FailureThreshold)
	setInt("CIRCUIT_BREAKER_SUCCESS_THRESHOLD", "resilience.circuit_breaker.success_threshold", &cb.SuccessThreshold)
	setDur("CIRCUIT_BREAKER_TIMEOUT", "resilience.circuit_breaker.timeout", &cb.Timeout)
	setDur("CIRCUIT_BREAKER_SLOW_CALL_THRESHOLD", "resilience.circuit_breaker.slow_call_threshold", &cb.SlowCallThreshold)
	setBool("FAILOVER_ENABLED", "failover.enabled", &cfg.Failover.Enabled)
	return origins, errs
}

// setFrom sets *dst from the variable k's value v, unless v is empty or the YAML
// already set it, and reports whether it did; a value that does not parse is
// reported in errs, saying what was expected.
func setFrom[T any](v, k string, dst **T, parse func(string) (T, error), expected string, errs *[]*Error) bool {
	if v == "" || *dst != nil {
		return false
	}
	x, err := parse(v)
	if err != nil {
		*errs = append(*errs, &Error{Env: k, Msg: fmt.Sprintf("expected %s; got %q", expected, v)})
		return false
	}
	*dst = &x
	return true
}
