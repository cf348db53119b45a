package config

import "strconv"

// RateLimits are a provider account's limits; 0 is unlimited.
type RateLimits struct {
	// RPM is requests per minute.
	RPM int `yaml:"rpm"`
	// TPM is tokens per minute (prompt + completion; estimated at admission,
	// corrected by the answer's usage).
	TPM int `yaml:"tpm"`
	// MaxConcurrency is calls in flight at once.
	MaxConcurrency int `yaml:"max_concurrency"`
}

// ProviderLimits are providers.X.limits: the account's limits, shared by all its
// models, and each model's own (by the provider's model name). A target at a
// limit is skipped like an open breaker; when every target of a request is, the
// client gets 429.
type ProviderLimits struct {
	// RPM is requests per minute.
	RPM int `yaml:"rpm"`
	// TPM is tokens per minute.
	TPM int `yaml:"tpm"`
	// MaxConcurrency is calls in flight at once.
	MaxConcurrency int `yaml:"max_concurrency"`
	// Models are per-model limits, checked as well as the account's.
	Models map[string]RateLimits `yaml:"models"`
}

// Account is the account-wide part of l.
func (l ProviderLimits) Account() RateLimits {
	return RateLimits{RPM: l.RPM, TPM: l.TPM, MaxConcurrency: l.MaxConcurrency}
}

// HeapFloor is server.heap_floor_bytes (DefaultHeapFloorBytes when unset).
func (s Server) HeapFloor() int64 {
	if s.HeapFloorBytes == nil {
		return DefaultHeapFloorBytes
	}
	return *s.HeapFloorBytes
}

// KeyMetricsOn reports server.key_metrics (default on).
func (s Server) KeyMetricsOn() bool { return s.KeyMetrics == nil || *s.KeyMetrics }

func validateLimits(path string, l ProviderLimits, add addFunc) {
	check := func(p string, r RateLimits) {
		for _, f := range []struct {
			name string
			v    int
		}{{"rpm", r.RPM}, {"tpm", r.TPM}, {"max_concurrency", r.MaxConcurrency}} {
			if f.v < 0 {
				add(p+"."+f.name, "must not be negative (0 = unlimited), got %s", strconv.Itoa(f.v))
			}
		}
	}
	check(path, l.Account())
	for m, r := range l.Models {
		check(path+".models."+m, r)
	}
}
