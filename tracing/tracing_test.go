package tracing_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/tracing"
)

// TestFromEnvRefusesUnknownProtocols: with tracing on, the OTLP protocol must be
// grpc or http/protobuf; anything else is refused with the variable's name and
// the values allowed (http/json too: the exporter cannot send it).
func TestFromEnvRefusesUnknownProtocols(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		env     map[string]string
		wantErr string
	}{
		{name: "default", env: map[string]string{}},
		{name: "grpc", env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}},
		{name: "http/protobuf", env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}},
		{name: "traces protocol wins", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}},
		{name: "unknown", env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grcp"},
			wantErr: `OTEL_EXPORTER_OTLP_PROTOCOL="grcp": want grpc or http/protobuf`},
		{name: "unknown traces protocol", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http"},
			wantErr: `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL="http": want grpc or http/protobuf`},
		{name: "http/json", env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
			wantErr: `OTEL_EXPORTER_OTLP_PROTOCOL="http/json" is not supported (the OTLP exporter sends protobuf only): want grpc or http/protobuf`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := func(k string) (string, bool) {
				if k == "OTEL_EXPORTER_OTLP_ENDPOINT" {
					return "http://127.0.0.1:4318", true
				}
				v, ok := tc.env[k]
				return v, ok
			}
			tp, shutdown, err := tracing.FromEnv(context.Background(), env)
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, tp)
			require.NoError(t, shutdown(context.Background()))
		})
	}
}
