// Package config defines Switchyard's configuration: one YAML file with ${VAR} and
// ${VAR:-default} expansion, environment defaults, and validation that reports every
// problem at once with the key path.
package config

import "time"

// Config is the whole configuration file.
type Config struct {
	// Server is the listening side: addresses, keys, limits.
	Server Server `yaml:"server"`
	// Providers are the upstreams, by the name used in "provider/model".
	Providers map[string]*Provider `yaml:"providers"`
	// Resilience is the global retry and breaker block every provider inherits.
	Resilience Resilience `yaml:"resilience"`
	// VirtualModels route one model name to several targets.
	VirtualModels []VirtualModel `yaml:"virtual_models"`
	// Failover holds the global failover defaults for virtual models.
	Failover Failover `yaml:"failover"`
	// Usage configures the usage ledger (config/usage.go).
	Usage Usage `yaml:"usage"`
	// Pricing prices models for the ledger, by "provider/model" or model name.
	Pricing map[string]Price `yaml:"pricing"`
	// PricingFile is a YAML or JSON file of prices in pricing's shape; pricing's
	// own entries win over the file's.
	PricingFile string `yaml:"pricing_file"`
	// State is where shared state lives (embedded, or Redis for several replicas).
	State State `yaml:"state"`

	// envWarnings are what the environment asked for that cannot work as set
	// (Warnings reports them).
	envWarnings []string
}

// Server configures the listeners.
type Server struct {
	// HTTPAddr is the REST listener (OpenAI-compatible API, health, metrics).
	HTTPAddr string `yaml:"http_addr"`
	// GRPCAddr is the gRPC listener.
	GRPCAddr string `yaml:"grpc_addr"`
	// MasterKey, when set, is required as a bearer token on inference calls.
	MasterKey Secret `yaml:"master_key"`
	// AdminKey, when set, is required as a bearer token on admin calls.
	AdminKey Secret `yaml:"admin_key"`
	// AllowUnauthenticated permits binding a non-loopback address without keys.
	AllowUnauthenticated bool `yaml:"allow_unauthenticated"`
	// MaxBodyBytes limits request bodies; larger ones get 413.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// StreamIdleTimeout limits each gap between upstream stream reads after the first byte.
	StreamIdleTimeout time.Duration `yaml:"stream_idle_timeout"`
	// DrainTimeout is the drain deadline for in-flight calls on SIGTERM.
	DrainTimeout time.Duration `yaml:"drain_timeout"`
	// DrainDelay is how long, after SIGTERM or SIGINT, both listeners go on
	// accepting and serving new calls while readiness answers 503 and gRPC health
	// NOT_SERVING, so that load balancers stop sending first; then the drain
	// (DrainTimeout) begins. A second signal ends it early. 0: no delay.
	DrainDelay time.Duration `yaml:"drain_delay"`
	// ReadTimeout bounds reading a whole REST request, headers and body; slower
	// requests get 408 and their connection closed. Answers and streams are not bounded by it.
	ReadTimeout time.Duration `yaml:"read_timeout"`
	// IdleTimeout closes REST keep-alive and gRPC connections idle for this long.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// MaxConnectionAge makes gRPC clients reconnect (GOAWAY) after a connection has
	// lived this long (±10 % jitter), so that long-lived clients rebalance across
	// replicas; calls in flight then get MaxConnectionAgeGrace to finish.
	MaxConnectionAge time.Duration `yaml:"max_connection_age"`
	// MaxConnectionAgeGrace is how long calls on an aged-out gRPC connection may run
	// on before it is closed (streams longer than it are cut).
	MaxConnectionAgeGrace time.Duration `yaml:"max_connection_age_grace"`
	// RecheckInterval is how often providers whose model discovery failed are asked again.
	RecheckInterval time.Duration `yaml:"recheck_interval"`
	// DataDir holds runtime state (e.g. virtual models created through the admin API).
	DataDir string `yaml:"data_dir"`
	// KeyMetrics counts requests per virtual key (label: the key's id) when true
	// or unset; false turns the per-key series off.
	KeyMetrics *bool `yaml:"key_metrics"`
	// HeapFloorBytes is the heap size below which the garbage collector does not
	// run, above which it runs at GOGC=50 (internal/heapfloor); unset means
	// DefaultHeapFloorBytes, 0 leaves Go's own pacing. With GOGC set in the
	// environment, pacing is left as the user set it.
	HeapFloorBytes *int64 `yaml:"heap_floor_bytes"`
}

// Provider is one upstream.
type Provider struct {
	// Type is the wire format: openai (also openrouter, vllm, ollama, groq, xai and
	// other OpenAI-compatible servers), azure (Azure OpenAI), anthropic (Anthropic's
	// Messages API), simulator.
	Type string `yaml:"type"`
	// BaseURL is the API root, e.g. https://api.openai.com/v1.
	BaseURL string `yaml:"base_url"`
	// APIKey is sent as a bearer token upstream (type azure: the api-key header;
	// type anthropic: x-api-key).
	APIKey Secret `yaml:"api_key"`
	// Models are served even when discovery (GET {base_url}/models) fails.
	Models []string `yaml:"models"`
	// EmbeddingModels are served like models and marked "mode": "embedding" in
	// /v1/models (names containing "embed" are marked without being listed here).
	EmbeddingModels []string `yaml:"embedding_models"`
	// Headers are added to every upstream request.
	Headers map[string]string `yaml:"headers"`
	// APIVersion (type azure) is the api-version query parameter of Azure's
	// deployment API; DefaultAzureAPIVersion when unset. The v1 API sends none.
	APIVersion string `yaml:"api_version"`
	// Deployments (type azure) maps model names to Azure deployment names; a model
	// without an entry is its own deployment. Azure lists no deployments, so these
	// model names (and models:) are what the provider serves.
	Deployments map[string]string `yaml:"deployments"`
	// BearerToken (type azure) is a Microsoft Entra ID access token, sent as
	// "Authorization: Bearer" in place of the api-key header.
	BearerToken Secret `yaml:"bearer_token"`
	// DefaultMaxTokens (type anthropic) is the max_tokens sent when a chat request
	// sets neither max_tokens nor max_completion_tokens (Anthropic requires one);
	// DefaultAnthropicMaxTokens when unset.
	DefaultMaxTokens int `yaml:"default_max_tokens"`
	// ConnectTimeout bounds dialling the upstream.
	ConnectTimeout time.Duration `yaml:"connect_timeout"`
	// ResponseHeaderTimeout bounds the wait for response headers (non-stream calls).
	ResponseHeaderTimeout time.Duration `yaml:"response_header_timeout"`
	// Timeout bounds a whole non-stream attempt.
	Timeout time.Duration `yaml:"timeout"`
	// StreamIdleTimeout overrides server.stream_idle_timeout for this provider.
	StreamIdleTimeout time.Duration `yaml:"stream_idle_timeout"`
	// Resilience overrides the global block field by field.
	Resilience Resilience `yaml:"resilience"`
	// Simulator tunes the simulator provider.
	Simulator Simulator `yaml:"simulator"`
	// Limits are the provider account's own rpm, tpm and max_concurrency, and per
	// model under models:.
	Limits ProviderLimits `yaml:"limits"`
}

// Simulator tunes the built-in simulator provider.
type Simulator struct {
	// TimeToFirstToken delays the first token.
	TimeToFirstToken time.Duration `yaml:"time_to_first_token"`
	// TokenDelay is the gap between tokens.
	TokenDelay time.Duration `yaml:"token_delay"`
	// Tokens is the answer length in tokens (words).
	Tokens int `yaml:"tokens"`
	// Dimensions is the length of its embeddings when a request sets none
	// (default 256).
	Dimensions int `yaml:"dimensions"`
}

// Resilience is a retry and breaker block. Every field is optional: unset fields
// inherit (provider → global → environment → built-in default).
type Resilience struct {
	// Retry tunes the retry sequence.
	Retry Retry `yaml:"retry"`
	// CircuitBreaker tunes the breaker.
	CircuitBreaker CircuitBreaker `yaml:"circuit_breaker"`
	// FirstTokenTimeout bounds a stream's wait from sending the request to its first
	// event that carries content (text, reasoning, a refusal, a tool-call delta or a
	// finish; a role-only chunk does not end it). Past it the attempt is a timeout
	// failure: retried, then failed over, as before the first byte. 0 turns it off;
	// resilience.DefaultFirstTokenTimeout when unset.
	FirstTokenTimeout *time.Duration `yaml:"first_token_timeout"`
}

// Retry is the retry block.
type Retry struct {
	MaxRetries      *int           `yaml:"max_retries"`
	InitialBackoff  *time.Duration `yaml:"initial_backoff"`
	MaxBackoff      *time.Duration `yaml:"max_backoff"`
	BackoffFactor   *float64       `yaml:"backoff_factor"`
	JitterFactor    *float64       `yaml:"jitter_factor"`
	RetryOnStatuses *StatusList    `yaml:"retry_on_statuses"`
	// BudgetPercent caps concurrent retries at this share of in-flight requests.
	BudgetPercent *float64 `yaml:"budget_percent"`
	// BudgetMinConcurrency is the retry budget's floor.
	BudgetMinConcurrency *int `yaml:"budget_min_concurrency"`
}

// CircuitBreaker is the breaker block.
type CircuitBreaker struct {
	Enabled           *bool          `yaml:"enabled"`
	Scope             *string        `yaml:"scope"`
	FailureOnStatuses *StatusList    `yaml:"failure_on_statuses"`
	FailureThreshold  *int           `yaml:"failure_threshold"`
	SuccessThreshold  *int           `yaml:"success_threshold"`
	Timeout           *time.Duration `yaml:"timeout"`
	SlowCallThreshold *time.Duration `yaml:"slow_call_threshold"`
}

// VirtualModel routes requests for Source across Targets.
type VirtualModel struct {
	// Source is the model name clients send.
	Source string `yaml:"source"`
	// Strategy picks the first target: failover (default), round_robin, weighted.
	Strategy string `yaml:"strategy,omitempty"`
	// Targets are "provider/model" names, in failover order.
	Targets []Target `yaml:"targets"`
	// Failover says whether the remaining targets are tried on failover-eligible errors.
	Failover *Failover `yaml:"failover,omitempty"`
	// StreamResume continues a text stream that breaks after its first byte on the
	// next target of the chain (off by default); in YAML a boolean or a block.
	StreamResume *StreamResume `yaml:"stream_resume,omitempty"`
	// HedgeAfter, when set, starts the next target too if the first has produced no
	// content within it (no complete answer, for a non-stream call); the first to
	// produce content wins and the other is cancelled. Capped at one hedge per ten
	// requests. Off when unset or 0.
	HedgeAfter *time.Duration `yaml:"hedge_after,omitempty"`
}

// StreamResume tunes stream recovery after the first byte; in YAML it is a block
// or a plain boolean (enabled).
type StreamResume struct {
	// Enabled turns recovery on (a block without it is on).
	Enabled *bool `yaml:"enabled,omitempty"`
	// MaxResumes caps how many times one stream is continued (default 1).
	MaxResumes *int `yaml:"max_resumes,omitempty"`
}

// Target is one virtual model target.
type Target struct {
	// Model is "provider/model".
	Model string `yaml:"model"`
	// Weight is used by the weighted strategy (default 1).
	Weight *int `yaml:"weight,omitempty"`
}

// Failover tunes failover; in YAML it is a block or a plain boolean (enabled).
type Failover struct {
	Enabled         *bool       `yaml:"enabled,omitempty"`
	RetryOnStatuses *StatusList `yaml:"retry_on_statuses,omitempty"`
	RetryOnErrors   []string    `yaml:"retry_on_errors,omitempty"`
	MaxAttempts     *int        `yaml:"max_attempts,omitempty"`
}
