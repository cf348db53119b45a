package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/switchyard/switchyard/anthropicjson"
	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/limits"
	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/router"
)

// The /v1/messages surface (Anthropic-shaped clients): POST /v1/messages and
// /v1/messages/count_tokens. A call passes the same interceptor chain as a chat
// call, under the method names below (request id, span, request line, metrics,
// the master key, drain tracking), and is routed like one (router.Unary and
// router.Streaming: provider/model, bare names, virtual models, chains, breakers,
// retries). Per attempt, a target that speaks Anthropic's wire
// (providers.Messenger) gets the client's body intact but for its model; any
// other gets it translated to chat (anthropicjson.ToChat, once per request) and
// answers in Anthropic's shape (FromCompletion, EventWriter). Errors leave in
// Anthropic's shape (messages_errors.go), from the same error boundary as chat.
const (
	methodCreateMessage = "/switchyard.v1.MessagesService/CreateMessage"
	methodStreamMessage = "/switchyard.v1.MessagesService/StreamMessage"
	methodCountTokens   = "/switchyard.v1.MessagesService/CountTokens"
)

// opMessages names the endpoint kind in the router's spans.
const opMessages = "messages"

// messages serves POST /v1/messages and /v1/messages/count_tokens: the key
// (x-api-key or Authorization: Bearer) before the body, the body within the
// limits chat bodies have, then the call through the chain.
func (f *front) messages(w http.ResponseWriter, r *http.Request) {
	if key := r.Header.Get("X-Api-Key"); key != "" {
		// Anthropic's SDKs send the key as x-api-key; it wins over Authorization.
		r.Header.Set("Authorization", "Bearer "+key)
	}
	count := r.URL.Path == "/v1/messages/count_tokens"
	method := methodCreateMessage
	if count {
		method = methodCountTokens
	}
	if err := f.admit(w, r, method); err != nil {
		writeMessagesError(w, err)
		return
	}
	body, err := f.bodyOf(w, r)
	if err != nil {
		writeMessagesError(w, f.refused(w, r, method, err))
		return
	}
	// The head is read here to pick the handler; a bad one is the handler's
	// answer, so that it has its request line like any other call.
	read := anthropicjson.ReadHead
	if count {
		read = anthropicjson.ReadCountHead
	}
	req := messageRequest{body: body}
	if perr := decodeSafely(f.log, "reading a message request's head", func() error {
		req.head, req.err = read(body)
		return nil
	}); perr != nil {
		writeMessagesError(w, f.refused(w, r, method, perr))
		return
	}
	ms := messagesService{f.in.chat}
	switch {
	case count:
		f.unaryMessages(w, r, methodCountTokens, func(ctx context.Context) ([]byte, error) { return ms.countTokens(ctx, req) })
	case req.head.Stream:
		f.streamMessages(w, r, ms, req)
	default:
		f.unaryMessages(w, r, methodCreateMessage, func(ctx context.Context) ([]byte, error) { return ms.create(ctx, req) })
	}
}

// messageRequest is a request's body and its head as read (or why it could not be).
type messageRequest struct {
	body []byte
	head anthropicjson.Head
	err  error
}

// unaryMessages runs a call that answers with one JSON body.
func (f *front) unaryMessages(w http.ResponseWriter, r *http.Request, method string, call func(context.Context) ([]byte, error)) {
	sink := &headerSink{method: method}
	ctx := grpc.NewContextWithServerTransportStream(incomingContext(r), sink)
	info := &grpc.UnaryServerInfo{Server: f.in.chat, FullMethod: method}
	resp, err := f.in.unary(ctx, nil, info, func(ctx context.Context, _ any) (any, error) { return call(ctx) })
	copyHeaders(w, sink)
	if err != nil {
		writeMessagesError(w, err)
		return
	}
	setRequestIDHeader(w)
	w.Header().Set("Content-Type", "application/json")
	writeAnswer(w, resp.([]byte))
}

// messagesService serves the surface's calls with the chat service's router,
// metrics and log.
type messagesService struct{ *chatService }

// start is what every call does first: refuse a bad head, name the model on the
// request line.
func (s messagesService) start(ctx context.Context, req messageRequest) (*report, router.Call, error) {
	rep := reportOf(ctx)
	rep.op = opMessages
	call := callOf(ctx)
	call.Trace, call.Op = &rep.trace, opMessages
	call.Betas = betasOf(ctx)
	if req.err != nil {
		return rep, call, surfaceError(req.err)
	}
	rep.model = req.head.Model
	if err := admitModel(ctx, req.head.Model, limits.EstimateTokens(len(req.body), req.head.MaxTokens),
		limits.EstimateTokens(len(req.body), 0)); err != nil { // the admission stage's model steps
		return rep, call, err
	}
	if a := admissionOf(ctx); a != nil {
		call.EstTokens, call.EstPrompt = a.est, a.prompt
	}
	return rep, call, nil
}

// create answers a non-stream message.
func (s messagesService) create(ctx context.Context, req messageRequest) ([]byte, error) {
	rep, call, err := s.start(ctx, req)
	if err != nil {
		return nil, err
	}
	body, head := req.body, req.head
	chat := &translation{body: body}
	call.AnswerUsage = messageAnswerUsage // for the targets' tpm and a hedge's losing side
	resp, route, err := router.Unary(s.router, ctx, head.Model, call, func(ctx context.Context, t router.Target, a providers.Attempt) ([]byte, error) {
		if m, ok := t.Provider.(providers.Messenger); ok {
			return m.Messages(ctx, a, body) // the client's body: the provider sets its model
		}
		req, err := chat.request(t)
		if err != nil {
			return nil, err
		}
		c, err := t.Provider.Chat(ctx, &providers.Request{Body: req, Attempt: a})
		if err != nil {
			return nil, err
		}
		return fromCompletion(t, c, a.Model)
	})
	s.routed(ctx, rep, route)
	if err != nil {
		return nil, toStatus(s.log, err)
	}
	if u, ok := messageUsage(resp); ok {
		rep.tokensIn, rep.tokensOut = inputTokens(u), u.OutputTokens
		rep.anthropicUsage(u, true)
	}
	return resp, nil
}

// routed names the target on the request line and in X-Switchyard-Target.
func (s messagesService) routed(ctx context.Context, rep *report, route router.Route) {
	rep.answeredBy(ctx, route)
}

// fromCompletion is a chat target's answer in Anthropic's shape; an answer that
// cannot be put so is the target's failure (502, unreadable).
func fromCompletion(t router.Target, c *pb.ChatCompletion, model string) ([]byte, error) {
	if c.GetModel() != "" {
		model = c.GetModel()
	}
	b, err := anthropicjson.FromCompletion(c, model)
	if err != nil {
		return nil, &providers.Error{Provider: t.Provider.Name(), Status: http.StatusBadGateway, Kind: providers.KindUnreadable,
			Message: "provider " + t.Provider.Name() + " returned an answer that cannot be given as an Anthropic message: " + err.Error()}
	}
	return b, nil
}

// messageUsage reads an Anthropic message's usage.
func messageUsage(b []byte) (anthropicjson.Usage, bool) {
	var msg struct {
		Usage anthropicjson.Usage `json:"usage"`
	}
	if len(b) == 0 || json.Unmarshal(b, &msg) != nil {
		return anthropicjson.Usage{}, false
	}
	return msg.Usage, true
}

// messageAnswerUsage is what an Anthropic message says it used, the whole
// prompt and the output.
func messageAnswerUsage(answer any) (router.Usage, bool) {
	b, _ := answer.([]byte)
	u, ok := messageUsage(b)
	return router.Usage{Prompt: int64(inputTokens(u)), Completion: int64(u.OutputTokens)}, ok
}

// inputTokens is the whole prompt: Anthropic counts cached tokens apart.
func inputTokens(u anthropicjson.Usage) int {
	n := u.InputTokens
	if u.CacheReadInputTokens != nil {
		n += *u.CacheReadInputTokens
	}
	if u.CacheCreationInputTokens != nil {
		n += *u.CacheCreationInputTokens
	}
	return n
}

// countTokens passes a count_tokens request to the model's target when it counts
// tokens natively (an Anthropic target); any other target answers 404: the chat
// wire has no token counting endpoint.
func (s messagesService) countTokens(ctx context.Context, req messageRequest) ([]byte, error) {
	rep, call, err := s.start(ctx, req)
	if err != nil {
		return nil, err
	}
	body, head := req.body, req.head
	resp, route, err := router.Unary(s.router, ctx, head.Model, call, func(ctx context.Context, t router.Target, a providers.Attempt) ([]byte, error) {
		tc, ok := t.Provider.(providers.TokenCounter)
		if !ok {
			return nil, &providers.Error{Provider: t.Provider.Name(), Status: http.StatusNotFound, Type: anthropicjson.ErrorNotFound,
				Code: providers.CodeUnsupportedEndpoint, Message: "provider " + t.Provider.Name() + " does not count tokens: " +
					"/v1/messages/count_tokens is served only by targets that speak Anthropic's Messages API"}
		}
		return tc.CountTokens(ctx, a, body)
	})
	s.routed(ctx, rep, route)
	if err != nil {
		return nil, toStatus(s.log, err)
	}
	return resp, nil
}

// mdAnthropicBeta carries a /v1/messages client's anthropic-beta header.
const mdAnthropicBeta = "anthropic-beta"

// betasOf is the client's anthropic-beta values, one per feature (the header
// may be repeated or hold a comma-separated list).
func betasOf(ctx context.Context) []string {
	var out []string
	for _, v := range metadata.ValueFromIncomingContext(ctx, mdAnthropicBeta) {
		for _, b := range strings.Split(v, ",") {
			if b = strings.TrimSpace(b); b != "" && len(b) <= 128 {
				out = append(out, b)
			}
		}
	}
	return out
}
