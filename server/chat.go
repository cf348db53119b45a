package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/router"
)

// chatService serves switchyard.v1.ChatService and ModelService.
type chatService struct {
	pb.UnimplementedChatServiceServer
	log    *slog.Logger
	router *router.Router
}

// validate checks what every chat request needs before any upstream is called.
func validate(req *pb.ChatCompletionRequest) error {
	if req.GetModel() == "" {
		return invalidRequest("model", "you must provide a model parameter")
	}
	if len(req.GetMessages()) == 0 {
		return invalidRequest("messages", "'messages' must contain at least one message")
	}
	for i, m := range req.GetMessages() {
		if m.GetRole() == "" {
			return invalidRequest("messages["+strconv.Itoa(i)+"].role", "each message needs a 'role'")
		}
	}
	if req.N != nil && req.GetN() < 1 {
		return invalidRequest("n", "'n' must be at least 1")
	}
	return nil
}

// callOf reads the per-call metadata the router forwards upstream.
func callOf(ctx context.Context) router.Call {
	return router.Call{IdempotencyKey: validIdempotencyKey(firstMD(ctx, mdIdempotencyKey)), RequestID: requestID(ctx)}
}

// validIdempotencyKey keeps a key of visible ASCII up to 255 characters; anything
// else is ignored (SPEC §3).
func validIdempotencyKey(k string) string {
	if k == "" || len(k) > 255 {
		return ""
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return ""
		}
	}
	return k
}

func (s *chatService) CreateChatCompletion(ctx context.Context, req *pb.ChatCompletionRequest) (*pb.ChatCompletion, error) {
	if err := validate(req); err != nil {
		return nil, err
	}
	resp, route, err := s.router.Chat(ctx, req, callOf(ctx))
	if route.Provider != "" {
		_ = grpc.SetHeader(ctx, metadata.Pairs(mdTarget, route.String()))
	}
	if err != nil {
		return nil, toStatus(s.log, err)
	}
	return resp, nil
}

func (s *chatService) StreamChatCompletion(req *pb.ChatCompletionRequest, out grpc.ServerStreamingServer[pb.ChatCompletionChunk]) error {
	if err := validate(req); err != nil {
		return err
	}
	ctx := out.Context()
	st, route, err := s.router.Stream(ctx, req, callOf(ctx))
	if err != nil {
		return toStatus(s.log, err)
	}
	defer st.Close()
	_ = out.SetHeader(metadata.Pairs(mdTarget, route.String()))
	hint := burstHintFrom(ctx)
	pender, _ := st.(providers.Pender)
	for {
		chunk, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			s.log.Warn("stream ended early", "target", route.String(), "error", err.Error(), "request_id", requestID(ctx))
			return toStatus(s.log, err)
		}
		if hint != nil && pender != nil {
			hint.more = pender.Pending()
		}
		if err := out.Send(chunk); err != nil {
			return err
		}
	}
}

// modelService serves switchyard.v1.ModelService.
type modelService struct {
	pb.UnimplementedModelServiceServer
	router *router.Router
}

func (s *modelService) ListModels(context.Context, *pb.ListModelsRequest) (*pb.ListModelsResponse, error) {
	models := s.router.Models()
	out := &pb.ListModelsResponse{Object: "list", Data: make([]*pb.Model, 0, len(models))}
	for _, m := range models {
		out.Data = append(out.Data, &pb.Model{Id: m.ID, Object: "model", OwnedBy: m.OwnedBy})
	}
	return out, nil
}
