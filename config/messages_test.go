package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/config"
)

// loadMessage loads text as a config file and returns the error without the
// "config <path>: " prefix.
func loadMessage(t *testing.T, text string, env map[string]string) string {
	t.Helper()
	path := writeFile(t, text)
	_, err := config.Load(path, envOf(env))
	require.Error(t, err)
	require.ErrorIs(t, err, config.ErrInvalid)
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "config "+path+": ")
	return strings.TrimPrefix(msg, "config: ")
}

type messageCase struct {
	name, yaml, want string
	env              map[string]string
}

func runMessageCases(t *testing.T, cases []messageCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, loadMessage(t, tc.yaml, tc.env))
		})
	}
}

// Item 6: unknown keys name the key path and line, speak the file's language and
// suggest the nearest known key.
func TestUnknownKeyMessages(t *testing.T) {
	t.Parallel()
	runMessageCases(t, []messageCase{
		{name: "misspelt provider key, list value", yaml: "providers:\n  a:\n    type: openai\n    modles: [x]\n",
			want: `providers.a.modles (line 4): unknown key "modles"; did you mean "models"?`},
		{name: "misspelt server key", yaml: "server:\n  htp_addr: x\n",
			want: `server.htp_addr (line 2): unknown key "htp_addr"; did you mean "http_addr"?`},
		{name: "failover block in a virtual model", yaml: "virtual_models:\n  - source: v\n    failover: {enabld: true}\n    targets: [{model: simulator/x}]\n",
			want: `virtual_models[0].failover.enabld (line 3): unknown key "enabld"; did you mean "enabled"?`},
		{name: "key one block too high", yaml: "resilience:\n  max_retries: 2\n",
			want: `resilience.max_retries (line 2): unknown key "max_retries"; did you mean resilience.retry.max_retries?`},
		{name: "nothing close", yaml: "failover:\n  zzzzzz: 1\n",
			want: `failover.zzzzzz (line 2): unknown key "zzzzzz"; known keys: enabled, max_attempts, retry_on_errors, retry_on_statuses`},
		{name: "top level", yaml: "virtual_model: []\n",
			want: `virtual_model (line 1): unknown key "virtual_model"; did you mean "virtual_models"?`},
		{name: "key set twice", yaml: "server:\n  http_addr: 127.0.0.1:1\n  http_addr: 127.0.0.1:2\n",
			want: `server.http_addr (line 3): "http_addr" is set twice (first on line 2)`},
	})
}

// Item 7: a value of the wrong kind says what was expected, with an example.
func TestWrongKindMessages(t *testing.T) {
	t.Parallel()
	runMessageCases(t, []messageCase{
		{name: "word for a number", yaml: "resilience:\n  retry:\n    max_retries: lots\n",
			want: `resilience.retry.max_retries (line 3): expected a whole number, such as 3; got "lots"`},
		{name: "duration without unit", yaml: "providers:\n  a:\n    type: openai\n    timeout: 30\n",
			want: `providers.a.timeout (line 4): expected a duration with a unit: write 30s for 30 seconds (units: ms, s, m, h)`},
		{name: "duration word", yaml: "resilience:\n  retry:\n    initial_backoff: soon\n",
			want: `resilience.retry.initial_backoff (line 3): expected a duration such as 30s, 500ms or 2m; got "soon"`},
		{name: "fraction for a whole number", yaml: "server:\n  max_body_bytes: 1.5\n",
			want: `server.max_body_bytes (line 2): expected a whole number, such as 3; got 1.5`},
		{name: "word for a float", yaml: "resilience:\n  retry:\n    jitter_factor: high\n",
			want: `resilience.retry.jitter_factor (line 3): expected a number, such as 0.5; got "high"`},
		{name: "word for a boolean", yaml: "resilience:\n  circuit_breaker:\n    enabled: perhaps\n",
			want: `resilience.circuit_breaker.enabled (line 3): expected true or false; got "perhaps"`},
		{name: "scalar for a list", yaml: "providers:\n  a:\n    type: openai\n    models: gpt-4o\n",
			want: `providers.a.models (line 4): expected a list, such as [gpt-4o]; got "gpt-4o"`},
		{name: "scalar for statuses", yaml: "resilience:\n  retry:\n    retry_on_statuses: 429\n",
			want: `resilience.retry.retry_on_statuses (line 3): expected a list of statuses, such as [429]; got 429`},
		{name: "list for a block", yaml: "providers:\n  a: [1]\n",
			want: `providers.a (line 2): expected a block of settings (type, base_url, api_key, models, embedding_models, headers, api_version, ` +
				`deployments, bearer_token, default_max_tokens, connect_timeout, ` +
				`response_header_timeout, timeout, stream_idle_timeout, resilience, simulator, limits); got a list`},
		{name: "list for text", yaml: "providers:\n  a:\n    type: openai\n    headers: {x: [1]}\n",
			want: `providers.a.headers.x (line 4): expected a single value (text); got a list`},
		{name: "failover word", yaml: "virtual_models:\n  - source: v\n    failover: maybe\n    targets: [{model: simulator/x}]\n",
			want: `virtual_models[0].failover (line 3): expected true, false or a block (enabled, retry_on_statuses, retry_on_errors, max_attempts); got "maybe"`},
		{name: "file is a list", yaml: "- a\n",
			want: `line 1: the file must be a block of settings such as server: and providers:; got a list`},
		{name: "environment value", yaml: "server: {}\n", env: map[string]string{"RETRY_MAX_RETRIES": "many"},
			want: `RETRY_MAX_RETRIES: expected a whole number, such as 3; got "many"`},
	})
}

// Item 8: a YAML syntax error names the line that causes it.
func TestSyntaxErrorLine(t *testing.T) {
	t.Parallel()
	runMessageCases(t, []messageCase{
		{name: "bad indentation on line 4", yaml: "providers:\n  a:\n    type: openai\n   base_url: http://x\n",
			want: `line 4: this line does not line up with the keys above it (check its indentation, or a missing ':'): "   base_url: http://x"`},
		{name: "bad indentation after a multi-line list", yaml: "server:\n  http_addr: \"127.0.0.1:1\"\nproviders:\n  a:\n    models: [a,\n      b]\n    type: openai\n  base_url: x\n   timeout: 1s\n",
			want: `line 9: unexpected ':' (quote a value that contains ': ', and start each key on its own line): "   timeout: 1s"`},
		{name: "unclosed list", yaml: "server:\n  http_addr: x\nproviders: [\n",
			want: `line 3: a value is missing here (an unclosed [ or {?): "providers: ["`},
		{name: "tab indentation", yaml: "server:\n\thttp_addr: x\n",
			want: `line 2: tabs cannot indent YAML: use spaces: "\thttp_addr: x"`},
		{name: "secret values are not shown", yaml: "providers:\n  a:\n    type: openai\n   api_key: sk-live-123\n",
			want: `line 4: this line does not line up with the keys above it (check its indentation, or a missing ':'): "   api_key: [redacted]"`},
		{name: "the line is shown as written, before expansion", yaml: "providers:\n  a:\n    type: openai\n   base_url: ${BASE}\n",
			env:  map[string]string{"BASE": "http://user:pw@host"},
			want: `line 4: this line does not line up with the keys above it (check its indentation, or a missing ':'): "   base_url: ${BASE}"`},
		{name: "second document", yaml: "server: {}\n---\nproviders: {}\n",
			want: `line 2: a second YAML document (after ---) would be ignored: keep one document per file`},
	})
}

// Item 9: a listen address that is not host:port is reported as such, before the
// question of keys comes up.
func TestListenAddressChecked(t *testing.T) {
	t.Parallel()
	runMessageCases(t, []messageCase{
		{name: "no port", yaml: "server:\n  http_addr: notaport\n",
			want: `server.http_addr (line 2): "notaport" is not a listen address: write host:port, such as 127.0.0.1:8080 or :8080`},
		{name: "port out of range", yaml: "server:\n  grpc_addr: 127.0.0.1:70000\n",
			want: `server.grpc_addr (line 2): "127.0.0.1:70000": port 70000 is out of range (0 to 65535)`},
		{name: "port a word", yaml: "server:\n  grpc_addr: 127.0.0.1:nope\n",
			want: `server.grpc_addr (line 2): "127.0.0.1:nope": port "nope" is not a number from 0 to 65535`},
	})
	t.Run("addresses set after loading", func(t *testing.T) {
		t.Parallel()
		s := config.Server{HTTPAddr: "0.0.0.0:8080", GRPCAddr: "notaport"}
		require.EqualError(t, s.CheckAddrs(),
			`server.grpc_addr: "notaport" is not a listen address: write host:port, such as 127.0.0.1:8080 or :8080`)
		require.NoError(t, config.Server{HTTPAddr: ":8080", GRPCAddr: "localhost:0"}.CheckAddrs())
	})
}

// Item 10: a provider calling a hosted API without a key is named at start.
func TestMissingAPIKeyWarning(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, yaml string
		want       []string
	}{
		{name: "openai without key or base_url", yaml: "providers:\n  a:\n    type: openai\n",
			want: []string{`provider "a" has no API key: https://api.openai.com/v1 refuses every call without one (401) and lists no models; ` +
				`set providers.a.api_key (e.g. api_key: ${OPENAI_API_KEY}) or point base_url at a server that needs no key`}},
		{name: "groq default", yaml: "providers:\n  g:\n    type: groq\n",
			want: []string{`provider "g" has no API key: https://api.groq.com/openai/v1 refuses every call without one (401) and lists no models; ` +
				`set providers.g.api_key (e.g. api_key: ${GROQ_API_KEY}) or point base_url at a server that needs no key`}},
		{name: "key set", yaml: "providers:\n  a:\n    type: openai\n    api_key: sk\n"},
		{name: "key in a header", yaml: "providers:\n  a:\n    type: openai\n    headers: {Authorization: Bearer sk}\n"},
		{name: "local server", yaml: "providers:\n  a:\n    type: openai\n    base_url: http://127.0.0.1:1/v1\n"},
		{name: "key from an unset variable", yaml: "providers:\n  a:\n    type: openai\n    api_key: ${NOPE}\n    base_url: https://api.openai.com/v1\n",
			want: []string{`provider "a" has no API key: https://api.openai.com/v1 refuses every call without one (401) and lists no models; ` +
				`set providers.a.api_key (e.g. api_key: ${OPENAI_API_KEY}) or point base_url at a server that needs no key`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := config.Load(writeFile(t, tc.yaml), envOf(nil))
			require.NoError(t, err)
			require.Equal(t, tc.want, cfg.Warnings())
		})
	}
}

// Item 18 and the audit: numbers that would silently mean something else are
// rejected with the key path.
func TestOutOfRangeValuesRejected(t *testing.T) {
	t.Parallel()
	runMessageCases(t, []messageCase{
		{name: "a bad base_url shows no password", yaml: "providers:\n  a:\n    type: openai\n    api_key: k\n    base_url: ftp://user:hunter2-secret@host/v1\n",
			want: `providers.a.base_url (line 5): "ftp://host/v1" is not an http(s) URL`},
		{name: "negative drain_timeout", yaml: "server:\n  drain_timeout: -1s\n",
			want: `server.drain_timeout (line 2): must not be negative; got -1s`},
		{name: "negative drain_delay", yaml: "server:\n  drain_delay: -1s\n",
			want: `server.drain_delay (line 2): must not be negative; got -1s`},
		{name: "negative recheck_interval", yaml: "server:\n  recheck_interval: -5s\n",
			want: `server.recheck_interval (line 2): must not be negative; got -5s`},
		{name: "negative heap floor", yaml: "server:\n  heap_floor_bytes: -1\n",
			want: `server.heap_floor_bytes (line 2): must be from 0 (off) to 1 TiB (1099511627776); got -1`},
		{name: "heap floor over 1 TiB", yaml: "server:\n  heap_floor_bytes: 1099511627777\n",
			want: `server.heap_floor_bytes (line 2): must be from 0 (off) to 1 TiB (1099511627776); got 1099511627777`},
		{name: "max_backoff zero", yaml: "resilience:\n  retry:\n    max_backoff: 0s\n",
			want: `resilience.retry.max_backoff (line 3): must be more than 0; got 0s`},
		{name: "max_backoff below initial_backoff", yaml: "resilience:\n  retry:\n    initial_backoff: 2s\n    max_backoff: 1s\n",
			want: `resilience.retry.max_backoff (line 4): must be at least initial_backoff (2s); got 1s`},
		{name: "provider max_backoff below the global initial_backoff",
			yaml: "resilience:\n  retry:\n    initial_backoff: 2s\nproviders:\n  a:\n    type: simulator\n    resilience:\n      retry:\n        max_backoff: 1s\n",
			want: `providers.a.resilience.retry.max_backoff (line 9): must be at least resilience.retry.initial_backoff (2s); got 1s`},
		{name: "initial_backoff above the default max_backoff", yaml: "resilience:\n  retry:\n    initial_backoff: 1m\n",
			want: `resilience.retry.initial_backoff (line 3): must be at most the default max_backoff (30s); got 1m0s`},
		{name: "max_backoff from the environment", yaml: "server: {}\n", env: map[string]string{"RETRY_MAX_BACKOFF": "0s"},
			want: `resilience.retry.max_backoff (from RETRY_MAX_BACKOFF): must be more than 0; got 0s`},
		{name: "negative provider timeout", yaml: "providers:\n  a:\n    type: simulator\n    connect_timeout: -1s\n",
			want: `providers.a.connect_timeout (line 4): must not be negative; got -1s`},
		{name: "negative simulator delay", yaml: "providers:\n  a:\n    type: simulator\n    simulator:\n      token_delay: -1ms\n",
			want: `providers.a.simulator.token_delay (line 5): must not be negative; got -1ms`},
		{name: "negative simulator tokens", yaml: "providers:\n  a:\n    type: simulator\n    simulator:\n      tokens: -1\n",
			want: `providers.a.simulator.tokens (line 5): must not be negative; got -1`},
		{name: "jitter above 1", yaml: "resilience:\n  retry:\n    jitter_factor: 1.5\n",
			want: `resilience.retry.jitter_factor (line 3): must be between 0 and 1; got 1.5`},
		{name: "jitter below 0", yaml: "resilience:\n  retry:\n    jitter_factor: -0.1\n",
			want: `resilience.retry.jitter_factor (line 3): must be between 0 and 1; got -0.1`},
		{name: "jitter not a number", yaml: "resilience:\n  retry:\n    jitter_factor: .nan\n",
			want: `resilience.retry.jitter_factor (line 3): must be between 0 and 1; got NaN`},
		{name: "backoff_factor below 1", yaml: "resilience:\n  retry:\n    backoff_factor: 0.5\n",
			want: `resilience.retry.backoff_factor (line 3): must be at least 1; got 0.5`},
		{name: "backoff_factor infinite", yaml: "resilience:\n  retry:\n    backoff_factor: .inf\n",
			want: `resilience.retry.backoff_factor (line 3): must be at least 1; got +Inf`},
		{name: "budget_percent above 100", yaml: "resilience:\n  retry:\n    budget_percent: 150\n",
			want: `resilience.retry.budget_percent (line 3): must be between 0 and 100; got 150`},
		{name: "negative failure_threshold", yaml: "resilience:\n  circuit_breaker:\n    failure_threshold: -1\n",
			want: `resilience.circuit_breaker.failure_threshold (line 3): must not be negative; got -1`},
		{name: "success_threshold zero", yaml: "resilience:\n  circuit_breaker:\n    success_threshold: 0\n",
			want: `resilience.circuit_breaker.success_threshold (line 3): must be at least 1; got 0`},
		{name: "breaker timeout zero", yaml: "resilience:\n  circuit_breaker:\n    timeout: 0s\n",
			want: `resilience.circuit_breaker.timeout (line 3): must be more than 0 (to turn the breaker off, set enabled: false); got 0s`},
		{name: "negative slow_call_threshold", yaml: "resilience:\n  circuit_breaker:\n    slow_call_threshold: -1s\n",
			want: `resilience.circuit_breaker.slow_call_threshold (line 3): must not be negative; got -1s`},
		{name: "empty retry_on_errors phrase", yaml: "failover:\n  retry_on_errors: [\"\"]\n",
			want: `failover.retry_on_errors[0] (line 2): must not be empty (an empty phrase would match every error)`},
		{name: "negative max_attempts", yaml: "failover:\n  max_attempts: -1\n",
			want: `failover.max_attempts (line 2): must not be negative; got -1`},
		{name: "target without a model", yaml: "virtual_models:\n  - source: v\n    targets:\n      - model: simulator/\n",
			want: `virtual_models[0].targets[0].model (line 4): "simulator/" must be provider/model`},
		{name: "weighted with no weight", yaml: "virtual_models:\n  - source: v\n    strategy: weighted\n    targets:\n      - {model: simulator/a, weight: 0}\n",
			want: `virtual_models[0].targets (line 4): the weighted strategy needs a target with a weight above 0`},
	})
}

// Validation reports every problem at once, in file order.
func TestEveryProblemListed(t *testing.T) {
	t.Parallel()
	text := "server:\n  drain_timeout: -1s\n  recheck_interval: -1s\nresilience:\n  retry:\n    max_backoff: 0s\n"
	require.Equal(t, "3 problems:\n"+
		"  server.drain_timeout (line 2): must not be negative; got -1s\n"+
		"  server.recheck_interval (line 3): must not be negative; got -1s\n"+
		"  resilience.retry.max_backoff (line 6): must be more than 0; got 0s",
		loadMessage(t, text, nil))
	text = "server:\n  htp_addr: x\nresilience:\n  retry:\n    max_retries: lots\n"
	require.Equal(t, "2 problems:\n"+
		`  server.htp_addr (line 2): unknown key "htp_addr"; did you mean "http_addr"?`+"\n"+
		`  resilience.retry.max_retries (line 5): expected a whole number, such as 3; got "lots"`,
		loadMessage(t, text, nil))
}

// No message speaks Go: no package or type names, no YAML tags.
func TestMessagesHaveNoGoTypeNames(t *testing.T) {
	t.Parallel()
	bad := []string{
		"providers:\n  a:\n    type: openai\n    modles: [x]\n",
		"server:\n  htp_addr: x\n",
		"resilience:\n  retry:\n    max_retries: lots\n",
		"providers:\n  a:\n    type: openai\n    timeout: 30\n",
		"providers:\n  a:\n    type: openai\n    models: x\n",
		"providers:\n  a: [1]\n",
		"providers: [1]\n",
		"providers:\n  a:\n    headers: [1]\n",
		"providers:\n  a:\n    headers: {x: {y: z}}\n",
		"server:\n  max_body_bytes: [1]\n",
		"server:\n  allow_unauthenticated: 3\n",
		"server:\n  stream_idle_timeout: {a: b}\n",
		"resilience:\n  retry:\n    backoff_factor: x\n",
		"resilience:\n  retry:\n    retry_on_statuses: [[429]]\n",
		"resilience:\n  circuit_breaker:\n    scope: [a]\n",
		"virtual_models: {a: b}\n",
		"virtual_models:\n  - source: [v]\n",
		"virtual_models:\n  - source: v\n    targets: [{model: simulator/x, weight: heavy}]\n",
		"virtual_models:\n  - source: v\n    failover: {enabld: true}\n    targets: [{model: simulator/x}]\n",
		"virtual_models:\n  - source: v\n    failover: [x]\n",
		"failover: 3\n",
		"failover:\n  max_attempts: 1.5\n",
		"- a\n",
		"providers:\n  a:\n    type: openai\n   base_url: http://x\n",
		"a: [\n",
	}
	for _, text := range bad {
		t.Run(text, func(t *testing.T) {
			t.Parallel()
			msg := loadMessage(t, text, nil)
			for _, goism := range []string{"config.", "!!", "time.Duration", "unmarshal", "[]string", "int64", "float64", "yaml:"} {
				require.NotContains(t, msg, goism)
			}
		})
	}
}

func TestErrorsAreTyped(t *testing.T) {
	t.Parallel()
	_, err := config.Load(writeFile(t, "server:\n  drain_timeout: -1s\n"), envOf(nil))
	var ce *config.Error
	require.True(t, errors.As(err, &ce))
	require.Equal(t, config.Error{Path: "server.drain_timeout", Line: 2, Msg: "must not be negative; got -1s"}, *ce)
}
