package server

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/switchyard/switchyard/metrics"
	"github.com/switchyard/switchyard/router"
)

// BenchmarkRequestObservability is what metrics and the request log line cost per
// request (compare with the whole request's CPU time in `make bench`, ~200 µs).
func BenchmarkRequestObservability(b *testing.B) {
	b.ReportAllocs()
	m := metrics.New()
	m.SetKnown(func(string) bool { return true })
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	ctx := context.Background()
	for b.Loop() {
		ctx2, rep := newReport(ctx)
		m.InFlight(rep.surface, 1)
		rep.model, rep.target = "up/gpt-4o", router.Route{Provider: "up", Model: "gpt-4o"}
		rep.trace.Attempts, rep.tokensIn, rep.tokensOut = 1, 17, 4
		m.Attempt("up", "gpt-4o", "success")
		rep.finish(ctx2, log, m, "/switchyard.v1.ChatService/CreateChatCompletion", nil)
		m.InFlight(rep.surface, -1)
	}
}
