package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/keys"
	"github.com/switchyard/switchyard/limits"
	"github.com/switchyard/switchyard/metrics"
	"github.com/switchyard/switchyard/router"
)

// The admission stage of the interceptor chain: auth → key → limits.
//
//   - auth (chain.admission, before the handler, every call): the caller's key
//     — master, admin or virtual — is checked and named in the context.
//   - key and limits (once the model is known): a virtual key's allowlist (a
//     model outside it is 403 model_not_allowed, never a 404 that would tell
//     which models exist), then its rpm, tpm and max_concurrency (429).
//
// Why the second half runs where the request is decoded, not when the stage starts:
// the model is in the request body. A unary call's request is in the
// interceptor's hands, so the admission stage admits it before the handler; a
// gRPC stream's request is decoded by the handler's first RecvMsg, which the
// stream interceptor wraps (ctxStream); the REST front's in-process stream and the
// body-only surfaces (/v1/messages) call admitModel the moment they have read
// the model. Every path lands in the same function, once per call, before any
// upstream is touched. The concurrency slot and the tpm correction are released
// by the admission stage when the handler returns — answer, error, cancellation or panic
// alike — with the tokens the answer reported.
type admissionStage struct {
	log     *slog.Logger
	auth    authorizer
	router  *router.Router
	limiter *limits.Limiter     // nil: virtual keys' limits are not enforced (no keys)
	keyM    *metrics.KeyMetrics // nil: no per-key metrics
	budget  func(context.Context, keys.Key) error
}

// admission is one call's progress through the stage.
type admission struct {
	stage  *admissionStage
	method string
	key    *keys.Key // nil: master key, or no key needed
	done   bool      // the model was admitted (or refused)
	est    int       // the admission estimate of the call's tokens
	prompt int       // its prompt part (the request's size at ~4 bytes a token)
	grant  *limits.Grant
}

type admissionKey struct{}

func admissionOf(ctx context.Context) *admission {
	a, _ := ctx.Value(admissionKey{}).(*admission)
	return a
}

// enter is the auth step: it checks the caller's key and starts the call's admission.
func (s *admissionStage) enter(ctx context.Context, method string) (context.Context, *admission, error) {
	ctx, key, err := s.auth.check(ctx, method)
	a := &admission{stage: s, method: method, key: key}
	ctx = context.WithValue(ctx, admissionKey{}, a)
	if err == nil && method == passthroughMethod {
		// A passthrough call reaches a provider's whole API: only a key allowed
		// every model ("*") may make it, within its limits.
		err = admitModel(ctx, keys.All, 0, 0)
	}
	return ctx, a, err
}

// end releases what the call held: its concurrency slot, and its tpm charge
// corrected by the tokens it really used. began says an answer had begun (a
// stream's first content): a call that failed before any did used nothing
// (refused before an upstream, or an upstream's error status, which is not
// billed), and its estimate is given back, but for a timeout or a client that
// left (the upstream may have worked, and billed, past it): there the
// estimate stands.
func (a *admission) end(ctx context.Context, used int, began bool, err error) {
	code := http.StatusOK
	if err != nil {
		code = fromStatus(status.Convert(err)).HTTPStatus
	}
	if a.key != nil && a.stage.keyM != nil {
		a.stage.keyM.Request(a.key.ID, code)
	}
	var rerr error
	if c := status.Code(err); err != nil && used == 0 && !began && c != codes.DeadlineExceeded && c != codes.Canceled &&
		code != http.StatusGatewayTimeout {
		rerr = a.grant.DoneUnbilled()
	} else {
		rerr = a.grant.Done(used)
	}
	if rerr != nil {
		a.stage.log.Warn("rate limit release failed", "key", a.key.ID, "error", rerr.Error(), "request_id", requestID(ctx))
	}
}

// limited reports the calls a key's limits count (listing or looking up
// models costs nothing upstream).
func limited(method string) bool {
	switch method {
	case pb.ModelService_ListModels_FullMethodName, pb.ModelService_GetModel_FullMethodName:
		return false
	}
	return true
}

// modelRequest is a decoded request that names its model.
type modelRequest interface{ GetModel() string }

// admitRequest admits a decoded request naming a model (others pass).
func admitRequest(ctx context.Context, req any) error {
	r, ok := req.(modelRequest)
	if !ok || r.GetModel() == "" { // no model: the handler's validation answers
		return nil
	}
	size := 0
	if m, ok := req.(interface{ SizeVT() int }); ok {
		size = m.SizeVT()
	} else if m, ok := req.(proto.Message); ok {
		size = proto.Size(m)
	}
	completion := 0
	if c, ok := req.(*pb.ChatCompletionRequest); ok {
		completion = int(max(c.GetMaxCompletionTokens(), c.GetMaxTokens()))
	}
	return admitModel(ctx, r.GetModel(), limits.EstimateTokens(size, completion), limits.EstimateTokens(size, 0))
}

// admitModel is the key and limits steps for a call to model, estimated at est
// tokens (prompt of them its prompt): once per call, before any upstream call.
// The master key passes both.
func admitModel(ctx context.Context, model string, est, prompt int) error {
	if i := strings.IndexFunc(model, unicode.IsControl); i >= 0 {
		c, _ := utf8.DecodeRuneInString(model[i:])
		return invalidRequest("model", fmt.Sprintf("a model name has no control characters (%q at byte %d)", c, i))
	}
	a := admissionOf(ctx)
	if a == nil || a.done {
		return nil
	}
	a.done, a.est, a.prompt = true, est, prompt
	if rep := reportOf(ctx); rep.model == "" && model != keys.All {
		rep.model = model // a refusal here is answered, so it is logged and recorded with its model
	}
	k := a.key
	if k == nil {
		return nil
	}
	s := a.stage
	if !s.allows(k, model) {
		return statusOf(apiError{httpStatus: http.StatusForbidden, errType: "invalid_request_error", code: "model_not_allowed",
			param: "model", message: "This API key is not allowed to use the model '" + model + "'."})
	}
	if !limited(a.method) {
		return nil
	}
	if s.budget != nil {
		if err := s.budget(ctx, *k); err != nil {
			return err
		}
	}
	if s.limiter == nil {
		return nil
	}
	g, err := s.limiter.Admit(ctx, "key:"+k.ID, k.Limits, est)
	var ex *limits.ExceededError
	switch {
	case errors.As(err, &ex):
		s.keyM.Limited(k.ID, ex.Limit)
		setRateLimitHeaders(ctx, ex.Requests, ex.Tokens)
		return rateLimited(ex)
	case err != nil:
		s.log.Error("rate limiter unavailable", "key", k.ID, "error", err.Error(), "request_id", requestID(ctx))
		return statusOf(apiError{httpStatus: http.StatusServiceUnavailable, errType: "server_error", code: "rate_limiter_unavailable",
			message: "the rate limiter is unavailable; try again shortly", retryAfter: time.Second})
	}
	a.grant = g
	setRateLimitHeaders(ctx, g.Requests, g.Tokens)
	return nil
}

// rateLimited is OpenAI's 429 for a key's own limit: type "requests" or
// "tokens" (concurrency counts as requests), code rate_limit_exceeded, and when
// to retry (a freed concurrency slot has no known time: a second).
func rateLimited(ex *limits.ExceededError) error {
	kind, wait := limits.Requests, ex.RetryAfter
	switch ex.Limit {
	case limits.Tokens:
		kind = limits.Tokens
	case limits.Concurrency:
		wait = time.Second
	}
	return statusOf(apiError{httpStatus: http.StatusTooManyRequests, errType: kind, code: "rate_limit_exceeded",
		message: ex.Error(), retryAfter: max(wait, time.Millisecond)})
}

// allows reports whether k may call model: asked by name, and for a provider
// model also as it resolves ("gpt-4o" → "openai/gpt-4o").
func (s *admissionStage) allows(k *keys.Key, model string) bool {
	if k.AllowsAll() || k.Allows(model, "", "") {
		return true
	}
	if _, err := s.router.VirtualModel(model); err == nil {
		return false // a virtual model is allowed by its own name only
	}
	route, err := s.router.Resolve(model)
	if err != nil {
		return false
	}
	return k.Allows(model, route.Provider, route.Model)
}

// Rate limit headers, as OpenAI sends them.
const (
	mdLimitRequests     = "x-ratelimit-limit-requests"
	mdLimitTokens       = "x-ratelimit-limit-tokens"
	mdRemainingRequests = "x-ratelimit-remaining-requests"
	mdRemainingTokens   = "x-ratelimit-remaining-tokens"
	mdResetRequests     = "x-ratelimit-reset-requests"
	mdResetTokens       = "x-ratelimit-reset-tokens"
)

// setRateLimitHeaders sends the key's rate limits' state as response metadata
// (REST headers), for the limits that are set.
func setRateLimitHeaders(ctx context.Context, req, tok limits.Status) {
	var kv []string
	if req.Limit > 0 {
		kv = append(kv, mdLimitRequests, strconv.Itoa(req.Limit), mdRemainingRequests, strconv.Itoa(req.Remaining),
			mdResetRequests, resetText(req.Reset))
	}
	if tok.Limit > 0 {
		kv = append(kv, mdLimitTokens, strconv.Itoa(tok.Limit), mdRemainingTokens, strconv.Itoa(tok.Remaining),
			mdResetTokens, resetText(tok.Reset))
	}
	if len(kv) > 0 {
		_ = grpc.SetHeader(ctx, metadata.Pairs(kv...))
	}
}

// resetText writes a reset as OpenAI does: "1s", "6m0s", "20ms".
func resetText(d time.Duration) string {
	d = d.Round(time.Millisecond)
	if d <= 0 {
		return "0s"
	}
	return d.String()
}
