package router

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/providers"
)

// startAttempt starts an upstream attempt's client span, with the GenAI semantic
// conventions' request attributes, and marks retries on the request's span.
// Prompt and completion text are never recorded.
func (r *Router) startAttempt(ctx context.Context, route Route, n int, op string, stream bool) (context.Context, trace.Span) {
	if r.tracer == nil {
		return ctx, nil
	}
	if n > 0 {
		if parent := trace.SpanFromContext(ctx); parent.IsRecording() {
			parent.AddEvent("retry", trace.WithAttributes(attribute.String("switchyard.target", route.String()), attribute.Int("switchyard.attempt", n+1)))
		}
	}
	if op == "" {
		op = "chat"
	}
	name := op + " " + route.Model
	if route.Model == "" { // a passthrough names no model
		name = op + " " + route.Provider
	}
	return r.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("gen_ai.operation.name", op), attribute.String("gen_ai.provider.name", route.Provider),
		attribute.String("gen_ai.request.model", route.Model), attribute.Bool("switchyard.stream", stream),
		attribute.Int("switchyard.attempt", n+1)))
}

// endAttempt records the attempt's outcome on its span.
// resp is the call's answer when it tells its model, id and usage (a chat
// completion does), anything else otherwise.
func endAttempt(span trace.Span, answer any, err error) {
	if span == nil {
		return
	}
	defer span.End()
	if resp, ok := answer.(*pb.ChatCompletion); ok && resp != nil {
		span.SetAttributes(attribute.String("gen_ai.response.model", resp.GetModel()), attribute.String("gen_ai.response.id", resp.GetId()))
		if u := resp.GetUsage(); u != nil {
			span.SetAttributes(attribute.Int("gen_ai.usage.input_tokens", int(u.GetPromptTokens())),
				attribute.Int("gen_ai.usage.output_tokens", int(u.GetCompletionTokens())))
		}
	}
	if err != nil {
		var pe *providers.Error
		if errors.As(err, &pe) {
			span.SetAttributes(attribute.Int("http.response.status_code", pe.Status), attribute.String("error.type", orKind(pe)))
		}
		span.SetStatus(otelcodes.Error, err.Error())
	}
}

func orKind(pe *providers.Error) string {
	switch {
	case pe.Kind != "":
		return pe.Kind
	case pe.Transport:
		return "transport_error"
	case pe.Timeout:
		return "timeout"
	}
	return "status"
}

// failoverEvent marks a failover on the request's span.
func failoverEvent(ctx context.Context, from, to, reason string) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent("failover", trace.WithAttributes(attribute.String("switchyard.from", from),
			attribute.String("switchyard.to", to), attribute.String("switchyard.reason", reason)))
	}
}
