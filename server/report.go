package server

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/switchyard/switchyard/metrics"
	"github.com/switchyard/switchyard/router"
)

// Surfaces.
const (
	surfaceREST = "rest"
	surfaceGRPC = "grpc"
)

// mdSurface marks calls grpc-gateway forwards from REST.
const mdSurface = "switchyard-surface"

type surfaceKey struct{}

// withSurface marks an in-process call as coming from REST.
func withSurface(ctx context.Context, surface string) context.Context {
	return context.WithValue(ctx, surfaceKey{}, surface)
}

// fromREST reports an in-process call from the REST surface (a context value no
// network caller can set, unlike the metadata grpc-gateway forwards).
func fromREST(ctx context.Context) bool {
	s, _ := ctx.Value(surfaceKey{}).(string)
	return s == surfaceREST
}

// report is what one request did; the interceptor creates it, handlers fill it,
// and it becomes one log line and the request metrics.
type report struct {
	id      string // request id
	surface string
	start   time.Time
	model   string       // as asked
	target  router.Route // that answered (or failed last)
	// targetName is target as "provider/model" (setTarget): the response
	// header, the log line and the ledger's attempt share one string.
	targetName string
	stream     bool
	op         string // the endpoint kind in spans: "" is chat
	key        string // the virtual key's id ("" for the master key or none)
	// caller and adm are the admission stage's: who called (callerOf) and
	// what it admitted, for the call's end, which the first stage writes
	// outside the contexts the later stages made.
	caller    string
	adm       *admission
	trace     router.Trace
	tokensIn  int
	tokensOut int
	usage     reportUsage // the usage ledger's part (server/usage.go)
}

type reportKey struct{}

// answeredBy is setTarget, and the target's name in the response header
// (x-switchyard-target) when there is one.
func (r *report) answeredBy(ctx context.Context, route router.Route) {
	if name := r.setTarget(route); name != "" {
		_ = grpc.SetHeader(ctx, metadata.Pairs(mdTarget, name))
	}
}

// setTarget notes the target that answered (or failed last) and returns its
// name as a header value ("" for none; see headerText).
func (r *report) setTarget(route router.Route) string {
	r.target, r.targetName = route, ""
	if route.Provider != "" {
		r.targetName = route.String()
	}
	return headerText(r.targetName)
}

// headerText is s as a metadata value may carry it (printable ASCII: grpc-go
// fails the call on anything else, after its answer was made): any other byte,
// and %, %-escaped. A model name a provider may serve (UTF-8) names its target
// too.
func headerText(s string) string {
	i := 0
	for i < len(s) && s[i] >= 0x20 && s[i] < 0x7f && s[i] != '%' {
		i++
	}
	if i == len(s) {
		return s
	}
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, len(s)+16)
	b = append(b, s[:i]...)
	for ; i < len(s); i++ {
		if c := s[i]; c >= 0x20 && c < 0x7f && c != '%' {
			b = append(b, c)
		} else {
			b = append(b, '%', hex[c>>4], hex[c&15])
		}
	}
	return string(b)
}

func reportOf(ctx context.Context) *report {
	if r, ok := ctx.Value(reportKey{}).(*report); ok {
		return r
	}
	return &report{} // a handler called without the interceptor (never in production)
}

func newReport(ctx context.Context) (context.Context, *report) {
	surface, _ := ctx.Value(surfaceKey{}).(string)
	if surface == "" {
		surface = surfaceGRPC
		if firstMD(ctx, mdSurface) == surfaceREST {
			surface = surfaceREST
		}
	}
	r := &report{surface: surface, start: time.Now(), id: requestID(ctx)}
	return context.WithValue(ctx, reportKey{}, r), r
}

// finish logs the request's line and records its metrics.
func (r *report) finish(ctx context.Context, log *slog.Logger, m *metrics.Metrics, method string, err error) {
	latency := time.Since(r.start)
	r.trustUsage()
	endpoint := method[strings.LastIndexByte(method, '/')+1:]
	code := status.Code(err)
	httpStatus := http.StatusOK
	if err != nil {
		httpStatus = fromStatus(status.Convert(err)).HTTPStatus
	}
	m.Request(r.surface, endpoint, r.target.Provider, r.target.Model, httpStatus, r.stream, latency)
	r.record(ctx, method, httpStatus, err, latency)
	if r.tokensIn+r.tokensOut > 0 {
		m.Tokens(r.target.Provider, r.target.Model, r.tokensIn, r.tokensOut)
	}
	level := slog.LevelInfo
	if code != codes.OK && code != codes.Canceled {
		level = slog.LevelWarn
	}
	if !log.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{slog.String("request_id", requestID(ctx)), slog.String("surface", r.surface),
		slog.String("method", endpoint), slog.String("code", code.String()), slog.Int("status", httpStatus),
		slog.Float64("latency_ms", Millis(latency))}
	if r.model != "" {
		attrs = append(attrs, slog.String("model", r.model), slog.Bool("stream", r.stream),
			slog.Int64("attempts", r.trace.Attempts), slog.Int("failovers", r.trace.Failovers),
			slog.Bool("hedged", r.trace.Hedged), slog.Int("prompt_tokens", r.tokensIn), slog.Int("completion_tokens", r.tokensOut))
	}
	if r.key != "" {
		attrs = append(attrs, slog.String("key", r.key))
	}
	if r.target.Provider != "" {
		attrs = append(attrs, slog.String("target", r.targetName))
	}
	if len(r.trace.Resumes) > 0 { // the stream was continued on these targets (stream_resume)
		attrs = append(attrs, slog.String("resumed_to", strings.Join(r.trace.Resumes, ",")))
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", status.Convert(err).Message()))
	}
	// The record is made here, not by LogAttrs: no source is logged, and LogAttrs
	// would walk the stack for it (runtime.Callers) on every request.
	rec := slog.NewRecord(time.Now(), level, "request", 0)
	rec.AddAttrs(attrs...)
	_ = log.Handler().Handle(ctx, rec)
}

// Millis is d in milliseconds, to the microsecond: how every log line gives a duration.
func Millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// annotate puts the request's outcome on its server span. Prompt and completion
// text are never recorded.
func (r *report) annotate(span trace.Span, err error) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.String("switchyard.surface", r.surface), attribute.String("switchyard.request_id", r.id))
	if r.key != "" {
		span.SetAttributes(attribute.String("switchyard.key_id", r.key))
	}
	if r.model != "" {
		span.SetAttributes(attribute.String("gen_ai.operation.name", orDefault(r.op, "chat")), attribute.String("gen_ai.request.model", r.model),
			attribute.Bool("switchyard.stream", r.stream), attribute.Int64("switchyard.attempts", r.trace.Attempts),
			attribute.Int("switchyard.failovers", r.trace.Failovers),
			attribute.Int("gen_ai.usage.input_tokens", r.tokensIn), attribute.Int("gen_ai.usage.output_tokens", r.tokensOut))
	}
	if r.target.Provider != "" {
		span.SetAttributes(attribute.String("switchyard.target", r.targetName), attribute.String("gen_ai.provider.name", r.target.Provider),
			attribute.String("gen_ai.response.model", r.target.Model))
	}
	if err != nil {
		st := status.Convert(err)
		span.SetStatus(otelcodes.Error, st.Message())
		span.SetAttributes(attribute.String("rpc.grpc.status_code", st.Code().String()))
	}
}
