// Package tracing sets up OpenTelemetry tracing from the standard OTEL_*
// environment variables. Without them, tracing is off (a no-op provider) and
// costs nothing.
package tracing

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc/metadata"
)

// Name is the instrumentation scope of Switchyard's spans.
const Name = "github.com/switchyard/switchyard"

// Propagator reads and writes W3C trace context (traceparent, tracestate).
var Propagator propagation.TextMapPropagator = propagation.TraceContext{}

// Noop is a tracer provider that records nothing.
func Noop() trace.TracerProvider { return noop.NewTracerProvider() }

// Enabled reports whether the environment asks for traces: an OTLP endpoint is set
// (or OTEL_TRACES_EXPORTER=otlp), and neither OTEL_SDK_DISABLED=true nor
// OTEL_TRACES_EXPORTER=none says otherwise.
func Enabled(env func(string) (string, bool)) bool {
	get := func(k string) string { v, _ := env(k); return strings.ToLower(strings.TrimSpace(v)) }
	if get("OTEL_SDK_DISABLED") == "true" || get("OTEL_TRACES_EXPORTER") == "none" {
		return false
	}
	return get("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" ||
		get("OTEL_TRACES_EXPORTER") == "otlp"
}

// FromEnv returns an OTLP tracer provider configured by OTEL_* (protocol grpc, or
// http/protobuf by default), or a no-op provider when tracing is not configured;
// shutdown flushes and stops it.
func FromEnv(ctx context.Context, env func(string) (string, bool)) (trace.TracerProvider, func(context.Context) error, error) {
	if !Enabled(env) {
		return Noop(), func(context.Context) error { return nil }, nil
	}
	protocol, err := protocolOf(env)
	if err != nil {
		return nil, nil, err
	}
	var exp *otlptrace.Exporter
	if protocol == "grpc" {
		exp, err = otlptracegrpc.New(ctx)
	} else {
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, nil, err
	}
	res, err := resource.Merge(resource.NewSchemaless(attribute.String("service.name", "switchyard")),
		resource.Environment()) // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
	if err != nil {
		res = resource.Default()
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tp, tp.Shutdown, nil
}

// protocolOf is the OTLP protocol the environment asks for:
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL, else
// http/protobuf. Any other value than grpc or http/protobuf is an error naming the
// variable (http/json, which the OTel spec defines, included: the OTLP HTTP
// exporter sends protobuf only).
func protocolOf(env func(string) (string, bool)) (string, error) {
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		v, _ := env(name)
		switch p := strings.TrimSpace(v); p {
		case "":
			continue
		case "grpc", "http/protobuf":
			return p, nil
		case "http/json":
			return "", fmt.Errorf("%s=%q is not supported (the OTLP exporter sends protobuf only): want grpc or http/protobuf", name, v)
		default:
			return "", fmt.Errorf("%s=%q: want grpc or http/protobuf", name, v)
		}
	}
	return "http/protobuf", nil
}

// IncomingCarrier reads a call's incoming gRPC metadata for propagation, one key
// at a time, without copying the metadata (propagators only Get).
type IncomingCarrier struct{ Ctx context.Context }

// Get returns the first value of key.
func (c IncomingCarrier) Get(key string) string {
	if v := metadata.ValueFromIncomingContext(c.Ctx, key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// Set does nothing: incoming metadata is read-only.
func (IncomingCarrier) Set(string, string) {}

// Keys lists the keys.
func (c IncomingCarrier) Keys() []string {
	md, _ := metadata.FromIncomingContext(c.Ctx)
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	return keys
}
