package config

import "time"

// Built-in server defaults. The README's settings table is checked against these.
const (
	DefaultHTTPAddr          = "127.0.0.1:8080"
	DefaultGRPCAddr          = "127.0.0.1:9090"
	DefaultMaxBodyBytes      = 8 << 20
	DefaultStreamIdleTimeout = 60 * time.Second
	DefaultDrainTimeout      = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultDataDir           = "./data"
	DefaultRecheckInterval   = 60 * time.Second
	DefaultHeapFloorBytes    = 16 << 20

	DefaultConnectTimeout        = 10 * time.Second
	DefaultResponseHeaderTimeout = 10 * time.Minute
	DefaultProviderTimeout       = 10 * time.Minute

	DefaultSimulatorTokens = 24
	// SimulatorName is the provider added when none is configured.
	SimulatorName = "simulator"
)

// gRPC connection age: clients rebalance across replicas (README: Many replicas).
const (
	// DefaultMaxConnectionAge rebalances gRPC clients across replicas twice an hour.
	DefaultMaxConnectionAge = 30 * time.Minute
	// DefaultMaxConnectionAgeGrace lets a call on an aged-out connection run 5 more minutes.
	DefaultMaxConnectionAgeGrace = 5 * time.Minute
)

func applyDefaults(cfg *Config) {
	s := &cfg.Server
	if s.HTTPAddr == "" {
		s.HTTPAddr = DefaultHTTPAddr
	}
	if s.GRPCAddr == "" {
		s.GRPCAddr = DefaultGRPCAddr
	}
	if s.MaxBodyBytes == 0 {
		s.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if s.StreamIdleTimeout == 0 {
		s.StreamIdleTimeout = DefaultStreamIdleTimeout
	}
	if s.DrainTimeout == 0 {
		s.DrainTimeout = DefaultDrainTimeout
	}
	if s.ReadTimeout == 0 {
		s.ReadTimeout = DefaultReadTimeout
	}
	if s.IdleTimeout == 0 {
		s.IdleTimeout = DefaultIdleTimeout
	}
	if s.MaxConnectionAge == 0 {
		s.MaxConnectionAge = DefaultMaxConnectionAge
	}
	if s.MaxConnectionAgeGrace == 0 {
		s.MaxConnectionAgeGrace = DefaultMaxConnectionAgeGrace
	}
	if s.RecheckInterval == 0 {
		s.RecheckInterval = DefaultRecheckInterval
	}
	if s.DataDir == "" {
		s.DataDir = DefaultDataDir
	}
	applyUsageDefaults(&cfg.Usage)
	applyStateDefaults(&cfg.State)
	if len(cfg.Providers) == 0 {
		cfg.Providers = map[string]*Provider{SimulatorName: {Type: "simulator"}}
	}
	for _, p := range cfg.Providers {
		if p == nil {
			continue
		}
		if p.ConnectTimeout == 0 {
			p.ConnectTimeout = DefaultConnectTimeout
		}
		if p.ResponseHeaderTimeout == 0 {
			p.ResponseHeaderTimeout = DefaultResponseHeaderTimeout
		}
		if p.Timeout == 0 {
			p.Timeout = DefaultProviderTimeout
		}
		if p.StreamIdleTimeout == 0 {
			p.StreamIdleTimeout = s.StreamIdleTimeout
		}
		typeDefaults(p)
		if p.Type == "simulator" && p.Simulator.Tokens == 0 {
			p.Simulator.Tokens = DefaultSimulatorTokens
		}
		if p.BaseURL == "" {
			switch p.Type {
			case "openai":
				p.BaseURL = "https://api.openai.com/v1"
			case "ollama":
				p.BaseURL = "http://localhost:11434/v1"
			case "vllm":
				p.BaseURL = "http://localhost:8000/v1"
			case "openrouter":
				p.BaseURL = "https://openrouter.ai/api/v1"
			case "anthropic":
				p.BaseURL = DefaultAnthropicBaseURL
			case "groq":
				p.BaseURL = "https://api.groq.com/openai/v1"
			case "xai":
				p.BaseURL = "https://api.x.ai/v1"
			}
		}
	}
}

// ProviderTypes are the accepted provider types and whether Switchyard can call them yet.
var ProviderTypes = map[string]bool{
	"openai": true, "openrouter": true, "vllm": true, "ollama": true, "groq": true,
	"xai": true, "simulator": true, "anthropic": true, "azure": true,
}
