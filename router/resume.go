package router

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/openaijson"
	"github.com/switchyard/switchyard/providers"
)

// Outcomes of a resume attempt (the outcome label of switchyard_stream_resumes_total).
const (
	// ResumeSpliced: the next target accepted the continuation; its chunks follow.
	ResumeSpliced = "spliced"
	// ResumeRejected: the next target refused the continuation (an error status,
	// e.g. a provider that does not take an assistant prefill).
	ResumeRejected = "rejected"
	// ResumeSkipped: the next target was not called (its breaker is open).
	ResumeSkipped = "skipped"
)

// ResumeObserver is implemented by observers that count stream resumes.
type ResumeObserver interface {
	// StreamResume reports one attempt to continue a broken stream from one
	// target on another, with one of the Resume* outcomes.
	StreamResume(from, to, outcome string)
}

// ResumeMember is the chunk member naming a resume: the first chunk spliced from
// the next target carries {"switchyard":{"resumed_from":"p/m","resumed_to":"q/n"}}.
const ResumeMember = "switchyard"

// resumeOK reports whether a streamed request may be resumed at all: one choice,
// no log probabilities (a continuation would not match the probabilities sent).
func resumeOK(body *pb.ChatCompletionRequest) bool {
	return body.GetN() <= 1 && !body.GetLogprobs()
}

// remaining lists the chain's targets after the ones tried (walk's order).
func (c *chain) remaining(tried []Route) []Route {
	if len(tried) == 0 {
		return nil
	}
	first := 0
	for i, r := range c.routes {
		if r == tried[0] {
			first = i
			break
		}
	}
	var out []Route
	for i := len(tried); i < len(c.routes); i++ {
		out = append(out, c.at(first, i))
	}
	return out
}

// resumeStream continues a text stream that breaks after its first event on the
// next targets of its chain, splicing their chunks into the same stream: the first
// stream's id, created and model, choice index 0, no second role, usage summed.
// A stream that carried tool calls, a refusal or log probabilities is not
// resumed: it ends with its own error (one that breaks after its finish is
// complete, and needs none).
type resumeStream struct {
	r     *Router
	ctx   context.Context
	body  *pb.ChatCompletionRequest
	call  Call
	cur   providers.Stream
	route Route
	next  []Route
	left  int

	started  bool
	id       string
	created  int64
	model    string
	text     strings.Builder
	unsafe   bool      // tool calls, refusal, logprobs or a second choice seen
	finished bool      // a finish_reason seen
	usage    *pb.Usage // the last usage seen, prior included
	prior    *pb.Usage // the usage of the streams that broke
	// splice is the route the stream was continued from, until the first chunk
	// of the continuation carries it.
	splice string
	// The current part: the request it was sent, where its text starts, and the
	// usage it reported itself (before the cut parts' are added).
	partBody  *pb.ChatCompletionRequest
	partText  int
	partUsage *pb.Usage
}

func (r *Router) resumable(ctx context.Context, body *pb.ChatCompletionRequest, call Call, s providers.Stream,
	route Route, next []Route, max int) providers.Stream {
	return &resumeStream{r: r, ctx: ctx, body: body, call: call, cur: s, route: route, next: next, left: max, partBody: body}
}

func (s *resumeStream) Recv() (*pb.ChatCompletionChunk, error) {
	for {
		c, err := s.cur.Recv()
		if err == nil {
			s.see(c)
			return c, nil
		}
		if errors.Is(err, io.EOF) {
			return nil, err
		}
		if !s.resume(err) {
			if cerr := s.ctx.Err(); cerr != nil && errors.Is(err, providers.ErrStreamIncomplete) {
				return nil, cerr // the client left while its stream was being resumed: its leaving, not the cut
			}
			return nil, err
		}
	}
}

// see records what the client has been sent and rewrites continuation chunks.
func (s *resumeStream) see(c *pb.ChatCompletionChunk) {
	if !s.started {
		s.started, s.id, s.created, s.model = true, c.GetId(), c.GetCreated(), c.GetModel()
	} else {
		c.Id, c.Created, c.Model = s.id, s.created, s.model
	}
	if s.splice != "" {
		if c.Extra == nil {
			c.Extra = &structpb.Struct{Fields: map[string]*structpb.Value{}}
		}
		c.Extra.Fields[ResumeMember] = structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
			"resumed_from": structpb.NewStringValue(s.splice), "resumed_to": structpb.NewStringValue(s.route.String())}})
		s.splice = ""
		for _, ch := range c.GetChoices() {
			if ch.GetDelta() != nil {
				ch.Delta.Role = nil // one answer: the role came with the first chunk
			}
		}
	}
	if u := c.GetUsage(); u != nil {
		s.partUsage = &pb.Usage{PromptTokens: u.GetPromptTokens(), CompletionTokens: u.GetCompletionTokens()}
		if s.prior != nil {
			u.PromptTokens += s.prior.GetPromptTokens()
			u.CompletionTokens += s.prior.GetCompletionTokens()
			u.TotalTokens += s.prior.GetTotalTokens()
		}
		s.usage = u
	}
	for _, ch := range c.GetChoices() {
		d := ch.GetDelta()
		if ch.GetIndex() != 0 || len(d.GetToolCalls()) > 0 || d.GetRefusal() != "" || ch.GetLogprobs() != nil {
			s.unsafe = true
		}
		s.text.WriteString(d.GetContent())
		if ch.GetFinishReason() != "" {
			s.finished = true
		}
	}
}

// resume opens the continuation on the next target that accepts it, and reports
// whether it did.
func (s *resumeStream) resume(cause error) bool {
	if s.left == 0 || s.unsafe || s.finished || !s.started || s.ctx.Err() != nil ||
		!errors.Is(cause, providers.ErrStreamIncomplete) {
		return false
	}
	from := s.route.String()
	obs, _ := s.r.obs.(ResumeObserver)
	cont := s.body
	if s.text.Len() > 0 { // the partial answer, as an assistant message to continue from
		cont = continuation(s.body, s.text.String())
	}
	for len(s.next) > 0 && s.ctx.Err() == nil {
		route := s.next[0]
		s.next = s.next[1:]
		t := s.r.targets[route.Provider]
		req := &providers.Request{Body: cont, Attempt: providers.Attempt{Model: route.Model, RequestID: s.call.RequestID,
			IncludeUsage: s.call.IncludeUsage, Betas: s.call.Betas}}
		// Opened as any stream is (its target's own limits hold for a
		// continuation too), its end watched as finished watches a chat stream's.
		st, err := streamTry(s.r, s.call, func(ctx context.Context, t Target, _ providers.Attempt) (providers.Stream, error) {
			return t.Provider.Stream(ctx, req)
		}, finished)(s.ctx, route, t, req.Attempt)
		s.r.record(route, err)
		outcome := ResumeSpliced
		if _, skipped := (&Failover{}).eligible(err); skipped {
			outcome = ResumeSkipped
		} else if err != nil {
			outcome = ResumeRejected
		}
		if obs != nil && s.ctx.Err() == nil {
			obs.StreamResume(from, route.String(), outcome)
		}
		if err != nil {
			if s.ctx.Err() == nil { // else the client left: no target refused anything
				s.r.log.Warn("stream resume refused", "from", from, "to", route.String(), "outcome", outcome,
					"error", err.Error(), "request_id", s.call.RequestID)
			}
			continue
		}
		_ = s.cur.Close()
		if s.call.Trace != nil {
			s.call.Trace.Cut = append(s.call.Trace.Cut, s.cutUsage())
			s.call.Trace.LastPart = s.cutUsage // the part from here on, asked once it ended
		}
		s.partBody, s.partText, s.partUsage = cont, s.text.Len(), nil
		s.cur, s.route, s.splice = st, route, from
		if s.usage != nil { // a cut part that reported nothing leaves the sum as it was
			s.prior = s.usage
		}
		s.usage = nil
		s.left--
		if s.call.Trace != nil {
			s.call.Trace.Resumes = append(s.call.Trace.Resumes, route.String())
		}
		s.r.log.Info("stream resumed", "virtual_model", s.body.GetModel(), "from", from, "to", route.String(),
			"reason", cause.Error(), "partial_chars", s.text.Len(), "request_id", s.call.RequestID)
		return true
	}
	return false
}

// cutUsage is what the current part was billed (once it was cut, or ended): its
// own usage if it reported one, else an estimate from what it was sent and what
// it streamed.
func (s *resumeStream) cutUsage() CutUsage {
	if u := s.partUsage; u != nil {
		return CutUsage{Route: s.route, PromptTokens: int64(u.GetPromptTokens()), CompletionTokens: int64(u.GetCompletionTokens())}
	}
	return CutUsage{Route: s.route, Estimated: true, PromptTokens: tokensOf(proto.Size(s.partBody)),
		CompletionTokens: tokensOf(s.text.Len() - s.partText)}
}

// Pending reports whether the next chunk is at hand.
func (s *resumeStream) Pending() bool {
	p, ok := s.cur.(providers.Pender)
	return ok && p.Pending()
}

func (s *resumeStream) Close() error { return s.cur.Close() }

// Route is the target serving the stream now (the last one it was continued on).
func (s *resumeStream) Route() Route { return s.route }

// continuation is body with the partial answer text appended as an assistant
// message, in whichever form body holds its conversation.
func continuation(body *pb.ChatCompletionRequest, text string) *pb.ChatCompletionRequest {
	cont := proto.Clone(body).(*pb.ChatCompletionRequest)
	if raw := bytes.TrimRight(cont.MessagesJson, " \t\r\n"); len(raw) > 0 && raw[len(raw)-1] == ']' {
		msg := openaijson.Marshal(&pb.ChatMessage{Role: "assistant", Content: structpb.NewStringValue(text)})
		out := make([]byte, 0, len(raw)+len(msg)+1)
		out = append(append(append(out, raw[:len(raw)-1]...), ','), msg...)
		cont.MessagesJson = append(out, ']')
		return cont
	}
	cont.Messages = append(cont.Messages, &pb.ChatMessage{Role: "assistant", Content: structpb.NewStringValue(text)})
	return cont
}
