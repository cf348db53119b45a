package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/codec"
	"github.com/switchyard/switchyard/metrics"
	"github.com/switchyard/switchyard/openaijson"
	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/router"
)

// chatService serves switchyard.v1.ChatService and ModelService.
type chatService struct {
	pb.UnimplementedChatServiceServer
	log     *slog.Logger
	router  *router.Router
	metrics *metrics.Metrics
	// writeTimeout bounds a blocked Send to a gRPC client before the upstream is released.
	writeTimeout time.Duration
}

// validate checks what every chat request needs before any upstream is called.
// A conversation the REST surface kept as bytes (messages_json) was checked as
// it was read (openaijson.UnmarshalChat), and one the gRPC codec wrote from a
// caller's messages was made by Switchyard (codec.Transcoded); one a gRPC caller
// sent as bytes is checked here as the REST surface checks its own
// (openaijson.KeepMessagesJSON) and goes upstream as it is, or, when that check
// declines it, is decoded here, and checked as messages is.
func validate(ctx context.Context, req *pb.ChatCompletionRequest) error {
	if req.GetModel() == "" {
		return invalidRequest("model", "you must provide a model parameter")
	}
	msgs := req.GetMessages()
	if len(req.GetMessagesJson()) > 0 {
		if len(msgs) > 0 {
			return invalidRequest("messages_json", "set 'messages' or 'messages_json', not both")
		}
		if fromREST(ctx) || codec.Transcoded(req) || openaijson.KeepMessagesJSON(req) { // bytes Switchyard checked or wrote itself
			return validateOptions(req)
		}
		var err error
		if msgs, err = openaijson.Messages(req); err != nil {
			var de *openaijson.Error
			if errors.As(err, &de) {
				return invalidRequest(de.Param, "messages_json: "+de.Error())
			}
			return err
		}
		// Bytes the check declined are decoded, not forwarded: only that check
		// vouches for bytes sent upstream as they are.
		req.Messages, req.MessagesJson = msgs, nil
	}
	if len(msgs) == 0 {
		return invalidRequest("messages", "'messages' must contain at least one message")
	}
	for i, m := range msgs {
		if m.GetRole() == "" {
			return invalidRequest("messages["+strconv.Itoa(i)+"].role", "each message needs a 'role'")
		}
	}
	return validateOptions(req)
}

func validateOptions(req *pb.ChatCompletionRequest) error {
	if req.N != nil && req.GetN() < 1 {
		return invalidRequest("n", "'n' must be at least 1")
	}
	return nil
}

// callOf reads the per-call metadata the router forwards upstream.
func callOf(ctx context.Context) router.Call {
	call := router.Call{IdempotencyKey: validIdempotencyKey(firstMD(ctx, mdIdempotencyKey)), RequestID: requestID(ctx)}
	if a := admissionOf(ctx); a != nil {
		call.EstTokens, call.EstPrompt = a.est, a.prompt // for the targets' own limits, and a hedge's loser
	}
	return call
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
	rep := reportOf(ctx)
	rep.model = req.GetModel()
	if err := validate(ctx, req); err != nil {
		return nil, err
	}
	call := callOf(ctx)
	call.Trace = &rep.trace
	resp, route, err := s.router.Chat(ctx, req, call)
	rep.answeredBy(ctx, route)
	if err != nil {
		return nil, toStatus(s.log, err)
	}
	if u := resp.GetUsage(); u != nil {
		rep.tokensIn, rep.tokensOut = int(u.GetPromptTokens()), int(u.GetCompletionTokens())
		rep.setUsage(u)
	}
	return resp, nil
}

// StreamChatCompletion relays the upstream's chunks. Switchyard always asks the
// upstream for usage (to count tokens) but passes the usage on only to clients
// that asked for it.
func (s *chatService) StreamChatCompletion(req *pb.ChatCompletionRequest, out grpc.ServerStreamingServer[pb.ChatCompletionChunk]) error {
	ctx := out.Context()
	rep := reportOf(ctx)
	rep.model, rep.stream = req.GetModel(), true
	if err := validate(ctx, req); err != nil {
		return err
	}
	call := callOf(ctx)
	call.Trace, call.IncludeUsage = &rep.trace, true
	wantsUsage := req.GetStreamOptions().GetIncludeUsage()
	// upstream is the upstream call's own context: cancelling it releases the
	// upstream without touching the client's call.
	upstream, release := context.WithCancel(ctx)
	defer release()
	st, route, err := s.router.Stream(upstream, req, call)
	if name := rep.setTarget(route); name != "" {
		// A stream that fails before its first byte names its target too, as a unary call does.
		_ = out.SetHeader(metadata.Pairs(mdTarget, name))
	}
	if err != nil {
		return toStatus(s.log, err)
	}
	defer st.Close()
	sse := sseFrom(ctx)
	pender, _ := st.(providers.Pender)
	if raw, ok := st.(providers.RawStream); ok && sse != nil {
		return s.relay(ctx, rep, route, raw, pender, sse, wantsUsage)
	}
	// A gRPC client that stops reading blocks Send once its flow-control window is
	// full: after writeTimeout the upstream stream is released instead of pinned.
	var watch *sendWatch
	if s.writeTimeout > 0 && sse == nil {
		watch = watchSends(s.writeTimeout, release)
		defer watch.stop()
	}
	first := true
	for {
		chunk, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			at := route
			if rs, ok := st.(interface{ Route() router.Route }); ok {
				at = rs.Route() // the target it was last resumed on
			}
			s.incomplete(ctx, at, err)
			return toStatus(s.log, err)
		}
		if u := chunk.GetUsage(); u != nil {
			rep.tokensIn, rep.tokensOut = int(u.GetPromptTokens()), int(u.GetCompletionTokens())
			rep.setUsage(u)
			if !wantsUsage {
				if len(chunk.GetChoices()) == 0 {
					continue // the usage chunk the client did not ask for
				}
				chunk.Usage = nil
			}
		}
		if first {
			first = false
			s.metrics.TimeToFirstToken(route.Provider, route.Model, time.Since(rep.start))
			rep.firstToken()
		}
		if sse != nil && pender != nil {
			sse.more = pender.Pending()
		}
		if watch != nil {
			watch.sending()
		}
		err = out.Send(chunk)
		if watch != nil {
			watch.sent()
		}
		if err != nil {
			return err
		}
	}
}

// relay passes a stream to a REST client: chunks that need no change go out as
// the upstream sent them (inspected for finish, usage and errors, never decoded);
// the others (missing members to fill in, usage to withhold) are decoded,
// normalised and encoded.
func (s *chatService) relay(ctx context.Context, rep *report, route router.Route, st providers.RawStream,
	pender providers.Pender, sse *sseStream, wantsUsage bool) error {
	first := true
	for {
		c, err := st.NextRaw()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			s.incomplete(ctx, route, err)
			return toStatus(s.log, err)
		}
		if info := c.Info; info.Usage {
			rep.setUsageInfo(info)
			if !wantsUsage && info.UsageOnly {
				continue // the usage chunk the client did not ask for
			}
		}
		if first {
			first = false
			s.metrics.TimeToFirstToken(route.Provider, route.Model, time.Since(rep.start))
			rep.firstToken()
		}
		sse.more = pender != nil && pender.Pending()
		switch {
		case c.Decoded == nil && (wantsUsage || !c.Info.Usage):
			err = sse.SendRaw(c.Bytes)
		case c.Decoded == nil: // relayable but for usage the client did not ask for
			chunk := &pb.ChatCompletionChunk{}
			if derr := openaijson.UnmarshalChunk(c.Bytes, chunk); derr != nil {
				// InspectChunk gives the same verdict, so this does not happen; if it ever
				// did, the stream ends as incomplete, never with a half-decoded chunk.
				return &providers.StreamError{Provider: route.Provider, Kind: providers.StreamMalformedChunk,
					Reason: "the provider sent an unreadable chunk: " + derr.Error()}
			}
			chunk.Usage = nil
			err = sse.SendMsg(chunk)
		default:
			if !wantsUsage {
				c.Decoded.Usage = nil
			}
			err = sse.SendMsg(c.Decoded)
		}
		if err != nil {
			return err
		}
	}
}

// incomplete counts and logs a stream that stopped before its final event.
func (s *chatService) incomplete(ctx context.Context, route router.Route, err error) {
	reason := "cancelled"
	var se *providers.StreamError
	switch {
	case errors.As(err, &se):
		reason = se.Kind
	case context.Cause(ctx) == errDraining:
		reason = "draining"
	}
	level := slog.LevelDebug // the client left: its request line says so
	if reason != "cancelled" {
		s.metrics.Incomplete(route.Provider, reason)
		level = slog.LevelWarn
	}
	s.log.Log(ctx, level, "stream ended before its final event", "target", route.String(), "reason", reason,
		"error", err.Error(), "request_id", requestID(ctx))
}

// GetModel resolves a model name exactly as a chat request does (a virtual model,
// provider/model, or a bare name) and returns the model it routes to: a virtual
// model under its own name, a provider model as provider/model.
func (s *modelService) GetModel(_ context.Context, req *pb.GetModelRequest) (*pb.GetModelResponse, error) {
	id := req.GetModel()
	if _, err := s.router.VirtualModel(id); err == nil {
		return &pb.GetModelResponse{Model: &pb.Model{Id: id, Object: "model", OwnedBy: "switchyard", Mode: s.mode(id, true)}}, nil
	}
	route, err := s.router.Resolve(id)
	if err != nil {
		return nil, toStatus(s.log, err)
	}
	m := &pb.Model{Id: route.String(), Object: "model", OwnedBy: route.Provider, Mode: s.mode(route.String(), false)}
	for _, listed := range s.router.Models() {
		if listed.ID == m.Id {
			m.OwnedBy = listed.OwnedBy
		}
	}
	return &pb.GetModelResponse{Model: m}, nil
}

// modelService serves switchyard.v1.ModelService.
type modelService struct {
	pb.UnimplementedModelServiceServer
	log    *slog.Logger
	router *router.Router
	// embeds tells embedding models (see embedsRule); nil marks none.
	embeds func(router.Route) bool
}

func (s *modelService) ListModels(ctx context.Context, _ *pb.ListModelsRequest) (*pb.ListModelsResponse, error) {
	models := s.router.Models()
	out := &pb.ListModelsResponse{Object: "list", Data: make([]*pb.Model, 0, len(models))}
	a := admissionOf(ctx)
	for _, m := range models {
		if a != nil && a.key != nil && !a.stage.allows(a.key, m.ID) {
			continue // a virtual key sees only the models it may use
		}
		out.Data = append(out.Data, &pb.Model{Id: m.ID, Object: "model", OwnedBy: m.OwnedBy, Mode: s.mode(m.ID, m.OwnedBy == "switchyard")})
	}
	return out, nil
}
