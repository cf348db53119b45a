package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"google.golang.org/grpc"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/openaijson"
	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/router"
)

// embeddingService serves switchyard.v1.EmbeddingService: routed like chat
// (provider/model, bare names, virtual models with their strategies, failover,
// hedging), through the same guard (retries, breaker). Embeddings are idempotent,
// so every retry and hedge is safe.
type embeddingService struct {
	pb.UnimplementedEmbeddingServiceServer
	log    *slog.Logger
	router *router.Router
	// providers gives each provider's type, for the error of one that has no embeddings.
	providers map[string]ProviderInfo
}

// opEmbeddings names embeddings in spans.
const opEmbeddings = "embeddings"

// validateEmbeddings checks what every embeddings request needs before any upstream is called.
func validateEmbeddings(req *pb.CreateEmbeddingsRequest) error {
	if req.GetModel() == "" {
		return invalidRequest("model", "you must provide a model parameter")
	}
	empty := false
	switch k := req.GetInput().GetKind().(type) {
	case nil:
		return invalidRequest("input", "you must provide an input: a string, an array of strings, or token arrays")
	case *pb.EmbeddingInput_Texts:
		empty = len(k.Texts.GetValues()) == 0
	case *pb.EmbeddingInput_Tokens:
		empty = len(k.Tokens.GetValues()) == 0
	case *pb.EmbeddingInput_TokenLists:
		empty = len(k.TokenLists.GetValues()) == 0
		for i, l := range k.TokenLists.GetValues() {
			if len(l.GetValues()) == 0 {
				return invalidRequest("input["+strconv.Itoa(i)+"]", "a token array must not be empty")
			}
		}
	}
	if empty {
		return invalidRequest("input", "'input' must not be empty")
	}
	switch f := req.GetEncodingFormat(); f {
	case "", "float", "base64":
	default:
		return invalidRequest("encoding_format", fmt.Sprintf("'encoding_format' must be 'float' or 'base64'; got '%s'", f))
	}
	if req.Dimensions != nil && req.GetDimensions() < 1 {
		return invalidRequest("dimensions", "'dimensions' must be at least 1")
	}
	return nil
}

func (s *embeddingService) CreateEmbeddings(ctx context.Context, req *pb.CreateEmbeddingsRequest) (*pb.CreateEmbeddingsResponse, error) {
	rep := reportOf(ctx)
	rep.model, rep.op = req.GetModel(), opEmbeddings
	if err := validateEmbeddings(req); err != nil {
		return nil, err
	}
	call := callOf(ctx)
	call.Trace, call.Op = &rep.trace, opEmbeddings
	call.AnswerUsage = embeddingsUsage
	resp, route, err := router.Unary(s.router, ctx, req.GetModel(), call,
		func(ctx context.Context, t router.Target, a providers.Attempt) (*pb.CreateEmbeddingsResponse, error) {
			e, ok := t.Provider.(providers.Embedder)
			if !ok {
				return nil, unsupportedEndpoint(t.Provider.Name(), s.providers[t.Provider.Name()].Type, opEmbeddings)
			}
			return e.Embed(ctx, a, req)
		})
	rep.answeredBy(ctx, route)
	if err != nil {
		return nil, toStatus(s.log, err)
	}
	if u := resp.GetUsage(); u != nil {
		rep.tokensIn = int(u.GetPromptTokens())
	}
	return resp, nil
}

// unsupportedEndpoint is what a target answers for an endpoint kind its provider
// does not serve: a 400 naming it, not retried, not a breaker failure.
func unsupportedEndpoint(name, typ, what string) error {
	if typ == "" {
		typ = "unknown"
	}
	return &providers.Error{Provider: name, Status: http.StatusBadRequest, Type: "invalid_request_error",
		Code: providers.CodeUnsupportedEndpoint, Message: fmt.Sprintf("provider %s (type %s) does not serve %s", name, typ, what)}
}

// embeddings serves POST /v1/embeddings: the body is read within the size limit
// and decoded here (a 400 naming the parameter when it cannot be), then the call
// runs in process through the interceptor chain, as chat does.
func (f *front) embeddings(w http.ResponseWriter, r *http.Request) {
	const method = pb.EmbeddingService_CreateEmbeddings_FullMethodName
	body, ok := f.readBody(w, r, method)
	if !ok {
		return
	}
	req := &pb.CreateEmbeddingsRequest{}
	if err := decodeSafely(f.log, "decoding a REST embeddings request", func() error {
		return openaijson.UnmarshalEmbeddingsRequest(body, req)
	}); err != nil {
		writeError(w, f.refused(w, r, method, toStatus(f.log, err)))
		return
	}
	sink := &headerSink{method: method}
	ctx := grpc.NewContextWithServerTransportStream(incomingContext(r), sink)
	info := &grpc.UnaryServerInfo{Server: f.in.embed, FullMethod: sink.method}
	resp, err := f.in.unary(ctx, req, info, func(ctx context.Context, req any) (any, error) {
		return f.in.embed.CreateEmbeddings(ctx, req.(*pb.CreateEmbeddingsRequest))
	})
	copyHeaders(w, sink)
	if err != nil {
		writeError(w, err)
		return
	}
	out := openaijson.AppendEmbeddingsResponse(make([]byte, 0, 4096), resp.(*pb.CreateEmbeddingsResponse))
	w.Header().Set("Content-Type", "application/json")
	writeAnswer(w, out)
}

// embeddingsUsage is what an embeddings answer says it used (its inputs'
// tokens), for the targets' tpm and a hedge's losing side.
func embeddingsUsage(answer any) (router.Usage, bool) {
	r, _ := answer.(*pb.CreateEmbeddingsResponse)
	if r.GetUsage() == nil {
		return router.Usage{}, false
	}
	return router.Usage{Prompt: int64(r.GetUsage().GetPromptTokens())}, true
}
