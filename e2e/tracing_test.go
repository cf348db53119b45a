package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchyard/switchyard/app"
	"github.com/switchyard/switchyard/internal/fakeupstream"
)

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

func TestTracesForRequestsAndAttempts(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	backup := fakeupstream.New("gpt-4o-mini")
	t.Cleanup(backup.Close)
	g := start(t, "", withApp(app.WithTracerProvider(tp)), withYAML("  backup:\n    type: openai\n    base_url: "+backup.URL+"\n"+
		"resilience:\n  retry:\n    initial_backoff: 1ms\n"+
		"virtual_models:\n  - source: chain\n    targets:\n      - model: up/gpt-4o\n      - model: backup/gpt-4o-mini\n"))
	g.up.Script(fakeupstream.Reply{Status: 503}, fakeupstream.Reply{Status: 500})

	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	resp := post(t, g.base+"/chat/completions", strings.Replace(chatBody, "up/gpt-4o", "chain", 1)+`,"messages":[{"role":"user","content":"secret prompt"}]}`,
		"traceparent", parent)
	require.Equal(t, 200, resp.StatusCode)

	spans := exp.GetSpans().Snapshots()
	var server sdktrace.ReadOnlySpan
	var clients []sdktrace.ReadOnlySpan
	for _, s := range spans {
		switch s.SpanKind() {
		case trace.SpanKindServer:
			server = s
		case trace.SpanKindClient:
			clients = append(clients, s)
		}
	}
	require.NotNil(t, server)
	require.Equal(t, "switchyard.v1.ChatService/CreateChatCompletion", server.Name())
	require.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", server.SpanContext().TraceID().String(), "the caller's trace continues")
	require.Equal(t, "00f067aa0ba902b7", server.Parent().SpanID().String())
	sa := attrs(server)
	require.Equal(t, "chain", sa["gen_ai.request.model"].AsString())
	require.Equal(t, "backup/gpt-4o-mini", sa["switchyard.target"].AsString())
	require.Equal(t, int64(3), sa["switchyard.attempts"].AsInt64())
	var events []string
	for _, e := range server.Events() {
		events = append(events, e.Name)
	}
	require.Equal(t, []string{"retry", "failover"}, events)

	require.Len(t, clients, 3, "one client span per upstream attempt")
	for _, c := range clients {
		require.Equal(t, server.SpanContext().SpanID(), c.Parent().SpanID(), "attempts are children of the request")
		require.Equal(t, "chat", attrs(c)["gen_ai.operation.name"].AsString())
	}
	require.Equal(t, "chat gpt-4o", clients[0].Name())
	require.Equal(t, "up", attrs(clients[0])["gen_ai.provider.name"].AsString())
	require.Equal(t, int64(503), attrs(clients[0])["http.response.status_code"].AsInt64())
	last := attrs(clients[2])
	require.Equal(t, "gpt-4o-mini", last["gen_ai.request.model"].AsString())
	require.Equal(t, "gpt-4o-mini", last["gen_ai.response.model"].AsString())
	require.Equal(t, int64(17), last["gen_ai.usage.input_tokens"].AsInt64())

	got := backup.Requests()[0].Header.Get("traceparent")
	require.Contains(t, got, clients[2].SpanContext().SpanID().String(), "the upstream continues the attempt's trace")
	for _, s := range spans {
		for _, kv := range s.Attributes() {
			require.NotContains(t, kv.Value.Emit(), "secret prompt", "prompt text is never exported")
		}
	}
}
