package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/switchyard/switchyard/anthropicjson"
	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/keys"
	"github.com/switchyard/switchyard/openaijson"
	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/usage"
)

// Usage metadata: gRPC callers get it in trailing metadata, REST callers as
// response headers on non-stream answers. Cost is omitted when the model has no
// price; token counts are the upstream's (x-switchyard-tokens-estimated: true
// when it reported none and they are Switchyard's estimate).
const (
	mdCost            = "x-switchyard-cost-usd"
	mdPromptTokens    = "x-switchyard-prompt-tokens"
	mdCompletionTkns  = "x-switchyard-completion-tokens"
	mdCachedTokens    = "x-switchyard-cached-tokens"
	mdReasoningTokens = "x-switchyard-reasoning-tokens"
	mdTokensEstimated = "x-switchyard-tokens-estimated"
)

// usageHeaders are the REST names of the usage metadata.
var usageHeaders = map[string]string{
	mdCost: "X-Switchyard-Cost-Usd", mdPromptTokens: "X-Switchyard-Prompt-Tokens",
	mdCompletionTkns: "X-Switchyard-Completion-Tokens", mdCachedTokens: "X-Switchyard-Cached-Tokens",
	mdReasoningTokens: "X-Switchyard-Reasoning-Tokens", mdTokensEstimated: "X-Switchyard-Tokens-Estimated",
}

// endpointOf names a method's endpoint kind for the ledger; "" for calls that
// are not inference (models, admin, health).
func endpointOf(method string) string {
	if !strings.HasPrefix(method, "/switchyard.v1.") {
		return ""
	}
	name := method[strings.LastIndexByte(method, '/')+1:]
	switch {
	case method == passthroughMethod:
		return usage.EndpointPassthrough
	case method == methodCountTokens:
		return usage.EndpointCountTokens
	case strings.Contains(name, "Chat"):
		return usage.EndpointChat
	case strings.Contains(name, "Message"):
		return usage.EndpointMessages
	case strings.Contains(name, "Embedding"):
		return usage.EndpointEmbeddings
	}
	return ""
}

// setUsage takes the details of an OpenAI-style usage object (cached and
// reasoning tokens, total) onto the report.
func (r *report) setUsage(u *pb.Usage) {
	if u == nil {
		return
	}
	r.tokensIn, r.tokensOut = int(u.GetPromptTokens()), int(u.GetCompletionTokens())
	r.usage.total = int(u.GetTotalTokens())
	r.usage.cached = openaijson.DetailTokens(u.GetPromptTokensDetails(), "cached_tokens")
	r.usage.reasoning = openaijson.DetailTokens(u.GetCompletionTokensDetails(), "reasoning_tokens")
	r.usage.reported = true
}

// setUsageInfo takes the usage of a raw chunk that carries it, as InspectChunk
// read it (the REST relay never decodes chunks).
func (r *report) setUsageInfo(info openaijson.ChunkInfo) {
	r.tokensIn, r.tokensOut = info.PromptTokens, info.CompletionTokens
	r.usage.total, r.usage.cached, r.usage.reasoning = info.TotalTokens, info.CachedTokens, info.ReasoningTokens
	r.usage.reported = true
}

// record builds the request's usage record, hands it to the ledger and gives the
// caller its usage and cost back.
func (r *report) record(ctx context.Context, method string, httpStatus int, err error, latency time.Duration) {
	endpoint := endpointOf(method)
	u := &r.usage
	if u.ledger == nil || endpoint == "" || (r.model == "" && endpoint != usage.EndpointPassthrough) {
		return
	}
	key := r.key
	if key == "" {
		key = r.caller
	}
	final := r.target
	if n := len(r.trace.Resumes); n > 0 { // the stream was finished (or last broke) there
		final.Provider, final.Model, _ = strings.Cut(r.trace.Resumes[n-1], "/")
	}
	rec := usage.Record{Time: r.start, RequestID: r.id, Surface: r.surface, Endpoint: endpoint, Stream: r.stream,
		KeyID: key, Model: r.model, Provider: final.Provider, TargetModel: final.Model,
		Failovers: r.trace.Failovers, Resumes: len(r.trace.Resumes), Hedged: r.trace.Hedged,
		Latency: latency, TTFT: u.ttft, Status: httpStatus}
	if u.virtual != nil && u.virtual(r.model) {
		rec.VirtualModel = r.model
	}
	u.log.Each(func(a router.AttemptInfo) { rec.Attempts = append(rec.Attempts, attemptOf(a, r.target, r.targetName)) })
	tk := usage.Tokens{Prompt: int64(r.tokensIn), Completion: int64(r.tokensOut), Cached: int64(u.cached), CacheWrite: int64(u.cacheWrite)}
	if endpoint != usage.EndpointMessages {
		tk = usage.FromOpenAI(tk.Prompt, tk.Completion, int64(u.total), int64(u.cached), int64(u.reasoning))
	}
	// Anthropic's message_start tells a stream's prompt but not its output: such
	// tokens are no report. Elsewhere tokens are only ever what the answer said.
	said := tk.Total() > 0 && endpoint != usage.EndpointMessages
	if !u.reported && !said && (err == nil || u.ttft > 0) && r.target.Provider != "" {
		// The upstream reported no usage — it answered without it, or its stream
		// was cut after it began (the upstream still bills it): the admission
		// estimate stands in, marked.
		if a := r.adm; a != nil && a.prompt > 0 {
			// The prompt from the request's size (or as the stream's start told
			// it: Anthropic's message_start); a stream that started was billed
			// some completion too, at most the cap the request set.
			est := usage.Tokens{Prompt: int64(a.prompt), Cached: tk.Cached, CacheWrite: tk.CacheWrite, Estimated: true}
			if tk.Prompt > 0 {
				est.Prompt = tk.Prompt
			}
			if u.ttft > 0 {
				est.Completion = int64(max(a.est-a.prompt, 0))
			}
			tk = est
		}
	}
	rec.Tokens = tk
	if len(r.trace.Cut) > 0 && r.trace.LastPart != nil {
		billParts(&rec, r.trace.Cut, r.trace.LastPart())
	}
	billLost(&rec, r.trace.Lost)
	if err != nil {
		rec.ErrorCode = errorCode(err)
	}
	u.ledger.Record(&rec)
	r.returnUsage(ctx, &rec)
}

// billParts splits a resumed stream's usage by the target that used it: each
// cut part was billed by its own upstream (and is priced at its own price), and
// so was the last part: the reported usage less what the cut parts reported
// (the client's usage sums the parts that reported theirs), or, when the last
// part reported none, its estimate. The record's tokens become the sum.
func billParts(rec *usage.Record, cut []router.CutUsage, lastPart router.CutUsage) {
	last := rec.Tokens
	if lastPart.Estimated {
		last = usage.Tokens{Prompt: lastPart.PromptTokens, Completion: lastPart.CompletionTokens, Estimated: true}
	}
	total := usage.Tokens{}
	taken := make([]bool, len(rec.Attempts))
	for _, c := range cut {
		tk := usage.Tokens{Prompt: c.PromptTokens, Completion: c.CompletionTokens, Estimated: c.Estimated}
		if !lastPart.Estimated && !c.Estimated {
			last = last.Minus(tk) // summed into the reported usage
		}
		if i := bill(rec.Attempts, taken, c.Route.String(), tk); i >= 0 {
			rec.Attempts[i].Outcome = "stream_cut" // it opened, then broke: the answer went on elsewhere
		}
		total = total.Plus(tk)
	}
	bill(rec.Attempts, taken, rec.Provider+"/"+rec.TargetModel, last)
	rec.Tokens = total.Plus(last)
}

// billLost adds the usage of a hedge's losing side that answered anyway to the
// record, on its attempt (outcome hedge_lost), priced at its own target. The
// winner's success (the first at the final target) is not the loser's.
func billLost(rec *usage.Record, lost []router.CutUsage) {
	if len(lost) == 0 {
		return
	}
	taken := make([]bool, len(rec.Attempts))
	claim(rec.Attempts, taken, rec.Provider+"/"+rec.TargetModel) // the winner's: the record's own usage
	for _, l := range lost {
		tk := usage.Tokens{Prompt: l.PromptTokens, Completion: l.CompletionTokens, Estimated: l.Estimated}
		if i := bill(rec.Attempts, taken, l.Route.String(), tk); i >= 0 {
			rec.Attempts[i].Outcome = "hedge_lost"
			rec.Tokens = rec.Tokens.Plus(tk)
		}
	}
}

// bill puts tk on the first successful attempt at target not billed yet (the
// attempts are in the order they ended, as the parts are) and returns its index
// (-1: none).
func bill(as []usage.Attempt, taken []bool, target string, tk usage.Tokens) int {
	i := claim(as, taken, target)
	if i >= 0 {
		as[i].Tokens = &tk
	}
	return i
}

// claim marks the first successful attempt at target not taken yet, and
// returns its index (-1: none).
func claim(as []usage.Attempt, taken []bool, target string) int {
	for i := range as {
		if !taken[i] && as[i].Outcome == "ok" && as[i].Target == target {
			taken[i] = true
			return i
		}
	}
	return -1
}

// returnUsage sets the usage metadata: a trailer for gRPC callers, headers for
// REST callers of non-stream answers (a stream's headers are long gone).
func (r *report) returnUsage(ctx context.Context, rec *usage.Record) {
	if rec.Tokens.Total() == 0 && rec.CostUSD == nil {
		return
	}
	// One backing array for the values, the report's: this runs on every request.
	vals := r.usage.vals[:0]
	md := make(metadata.MD, 6)
	set := func(k, v string) {
		vals = append(vals, v)
		md[k] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	if rec.CostUSD != nil {
		set(mdCost, strconv.FormatFloat(*rec.CostUSD, 'f', -1, 64))
	}
	set(mdPromptTokens, strconv.FormatInt(rec.Tokens.Prompt, 10))
	set(mdCompletionTkns, strconv.FormatInt(rec.Tokens.Completion, 10))
	set(mdCachedTokens, strconv.FormatInt(rec.Tokens.Cached, 10))
	set(mdReasoningTokens, strconv.FormatInt(rec.Tokens.Reasoning, 10))
	if rec.Tokens.Estimated {
		set(mdTokensEstimated, "true")
	}
	if r.surface == surfaceGRPC {
		_ = grpc.SetTrailer(ctx, md)
	} else if !r.stream {
		_ = grpc.SetHeader(ctx, md)
	}
}

// attemptOf is one attempt as the ledger lists it; an attempt at the final
// target takes its name (finalName) rather than making another.
func attemptOf(a router.AttemptInfo, final router.Route, finalName string) usage.Attempt {
	name := finalName
	if a.Route != final || name == "" {
		name = a.Route.String()
	}
	out := usage.Attempt{Target: name, Outcome: "ok", Latency: a.Latency}
	if a.Err == nil {
		out.Status = 200
		return out
	}
	var pe *providers.Error
	switch {
	case errors.As(a.Err, &pe):
		out.Status = pe.Status
		switch {
		case pe.Kind != "":
			out.Outcome = pe.Kind
		case pe.Transport:
			out.Outcome = "transport_error"
		case pe.Timeout:
			out.Outcome = "timeout"
		default:
			out.Outcome = "status"
		}
	case errors.Is(a.Err, context.Canceled):
		out.Outcome = "cancelled"
	case errors.Is(a.Err, context.DeadlineExceeded):
		out.Outcome = "timeout"
	default:
		out.Outcome = "error"
	}
	return out
}

// errorCode is the code the caller's error body carries (its type, else the
// gRPC code's name).
func errorCode(err error) string {
	st := status.Convert(err)
	if st.Code() == codes.Canceled {
		return "cancelled"
	}
	e := fromStatus(st)
	if e.Code != "" {
		return e.Code
	}
	if e.Type != "" {
		return e.Type
	}
	return strings.ToLower(st.Code().String())
}

// reportUsage is what the ledger needs beyond the request line.
type reportUsage struct {
	ledger  *usage.Ledger
	virtual func(string) bool
	log     router.AttemptLog
	ttft    time.Duration
	// Upstream usage details: total, cached, cache writes (Anthropic), reasoning.
	total, cached, cacheWrite, reasoning int
	reported                             bool
	// vals backs the usage metadata's values (returnUsage): the report lives
	// as long as the request, which the metadata does not outlive.
	vals [6]string
}

// trustUsage takes a negative count an upstream reported as none: no count is
// below zero, and one would give tokens back to limits and take cost off the
// ledger and the budgets. Run before anything reads the counts (the admission's
// release, the call's end); running it again changes nothing.
func (r *report) trustUsage() {
	r.tokensIn, r.tokensOut = max(r.tokensIn, 0), max(r.tokensOut, 0)
	u := &r.usage
	u.total, u.cached, u.cacheWrite, u.reasoning = max(u.total, 0), max(u.cached, 0), max(u.cacheWrite, 0), max(u.reasoning, 0)
}

// attach makes the report collect what the ledger records (nothing without one).
func (r *report) attach(l *usage.Ledger, virtual func(string) bool) {
	if l == nil {
		return
	}
	r.usage.ledger, r.usage.virtual = l, virtual
	r.trace.Log = &r.usage.log
}

// firstToken notes the time to the first streamed event (once).
func (r *report) firstToken() {
	if r.usage.ttft == 0 {
		r.usage.ttft = max(time.Since(r.start), time.Nanosecond)
	}
}

// isVirtual tells virtual model names.
func isVirtual(rt *router.Router) func(string) bool {
	return func(name string) bool {
		if !rt.Known(name) { // provider/model names: no lookup (and no error built)
			return false
		}
		_, err := rt.VirtualModel(name)
		return err == nil
	}
}

// budgetCheck refuses a virtual key's call once its budget_usd is spent for the
// current budget_period: 429 insufficient_quota (what OpenAI's SDKs know), until
// the period resets. It reads the running total; it never queries the store.
func budgetCheck(spend *usage.Spend) func(context.Context, keys.Key) error {
	return func(_ context.Context, k keys.Key) error {
		over, spent, resets := spend.Over(k.ID, k.BudgetUSD, k.BudgetPeriod)
		if !over {
			return nil
		}
		return statusOf(apiError{httpStatus: http.StatusTooManyRequests, errType: "insufficient_quota", code: "insufficient_quota",
			message: fmt.Sprintf("This key has spent its budget of $%s for this %s ($%s spent); it resets at %s.",
				usd(k.BudgetUSD), k.BudgetPeriod, usd(spent), resets.Format(time.RFC3339))})
	}
}

// usd writes an amount of dollars as set or spent, to the millionth (a budget
// of $0.001 is not "$0.00"), without trailing zeros.
func usd(v float64) string {
	return strconv.FormatFloat(math.Round(v*1e6)/1e6, 'f', -1, 64)
}

// anthropicUsage takes Anthropic's cache reads and writes onto the report
// (tokensIn already counts them: inputTokens). final is an answer's own
// usage (a message's, a stream's message_delta), not message_start's, whose
// output is a placeholder: only a final usage that counts something is
// reported; otherwise the ledger estimates what the upstream did not say (a
// stream cut before its message_delta, a chat upstream behind /v1/messages
// that sent no usage, which the translation writes as zeros).
func (r *report) anthropicUsage(u anthropicjson.Usage, final bool) {
	if u.CacheReadInputTokens != nil {
		r.usage.cached = *u.CacheReadInputTokens
	}
	if u.CacheCreationInputTokens != nil {
		r.usage.cacheWrite = *u.CacheCreationInputTokens
	}
	r.usage.reported = r.usage.reported || final && (inputTokens(u) > 0 || u.OutputTokens > 0)
}
