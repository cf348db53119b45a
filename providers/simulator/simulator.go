// Package simulator is a built-in provider that needs no network: it answers with
// deterministic text (the same prompt always gives the same words), or, when the
// request offers tools, a deterministic call of one of them (see toolCall), with a
// configurable time to first token, delay between tokens and length. Switchyard
// falls back to it when no provider is configured.
package simulator

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/openaijson"
	"github.com/switchyard/switchyard/providers"
)

// Model is the model the simulator serves.
const Model = "sim-1"

// Config tunes the simulator.
type Config struct {
	// Name is the configured provider name.
	Name string
	// TimeToFirstToken delays the first token; TokenDelay separates tokens.
	TimeToFirstToken, TokenDelay time.Duration
	// Tokens is the answer length in words (default 24).
	Tokens int
	// Models overrides the served model list (default: sim-1).
	Models []string
	// EmbeddingModels are listed besides Models (default: sim-embed-1); every model
	// the simulator serves answers embeddings (see Embed).
	EmbeddingModels []string
	// Dimensions is the length of its embeddings when a request sets none
	// (default DefaultDimensions).
	Dimensions int
}

// Simulator is the simulator provider.
type Simulator struct {
	cfg Config
	seq atomic.Uint64
}

// New returns a simulator.
func New(cfg Config) *Simulator {
	if cfg.Tokens <= 0 {
		cfg.Tokens = 24
	}
	if len(cfg.Models) == 0 {
		cfg.Models = []string{Model}
	}
	if len(cfg.EmbeddingModels) == 0 {
		cfg.EmbeddingModels = []string{EmbeddingModel}
	}
	if cfg.Dimensions <= 0 {
		cfg.Dimensions = DefaultDimensions
	}
	return &Simulator{cfg: cfg}
}

// Name returns the configured provider name.
func (s *Simulator) Name() string { return s.cfg.Name }

// Models lists the simulated models.
func (s *Simulator) Models(context.Context) ([]string, error) {
	out := slices.Clone(s.cfg.Models)
	for _, m := range s.cfg.EmbeddingModels {
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out, nil
}

var vocabulary = strings.Fields(`switchyard routes every request through retries circuit breakers
and failover so that one slow or broken provider never becomes your outage the simulator answers
with deterministic words chosen from the prompt which makes tests repeatable and demos honest`)

// words returns the answer for a prompt: n words picked deterministically.
func words(prompt string, n int) []string {
	h := fnv.New64a()
	h.Write([]byte(prompt))
	x := h.Sum64() | 1
	out := make([]string, n)
	for i := range out {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		out[i] = vocabulary[x%uint64(len(vocabulary))]
	}
	return out
}

func lastPrompt(req *pb.ChatCompletionRequest) (prompt string, promptTokens int) {
	msgs, _ := openaijson.Messages(req) // checked before any provider is called
	for _, m := range msgs {
		text := contentText(m.GetContent())
		promptTokens += len(strings.Fields(text)) + 1
		if m.GetRole() == "user" {
			prompt = text
		}
	}
	return prompt, promptTokens
}

func contentText(v *structpb.Value) string {
	if s, ok := v.GetKind().(*structpb.Value_StringValue); ok {
		return s.StringValue
	}
	var b strings.Builder
	for _, part := range v.GetListValue().GetValues() {
		b.WriteString(part.GetStructValue().GetFields()["text"].GetStringValue())
		b.WriteByte(' ')
	}
	return b.String()
}

func (s *Simulator) maxTokens(req *pb.ChatCompletionRequest) (int, string) {
	n, finish := s.cfg.Tokens, "stop"
	limit := req.GetMaxCompletionTokens()
	if limit == 0 {
		limit = req.GetMaxTokens()
	}
	if limit > 0 && int(limit) < n {
		return int(limit), "length"
	}
	return n, finish
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (s *Simulator) id() string { return fmt.Sprintf("chatcmpl-sim-%d", s.seq.Add(1)) }

// Chat answers after TimeToFirstToken plus one TokenDelay per token.
func (s *Simulator) Chat(ctx context.Context, req *providers.Request) (*pb.ChatCompletion, error) {
	prompt, promptTokens := lastPrompt(req.Body)
	n, finish := s.maxTokens(req.Body)
	if err := sleep(ctx, s.cfg.TimeToFirstToken+time.Duration(n)*s.cfg.TokenDelay); err != nil {
		return nil, err
	}
	if name, args, id, ok := toolCall(req.Body, prompt); ok {
		finish := "tool_calls"
		typ := "function"
		return &pb.ChatCompletion{
			Id: s.id(), Object: "chat.completion", Created: time.Now().Unix(), Model: req.Model,
			Choices: []*pb.Choice{{Index: 0, FinishReason: &finish, Message: &pb.ChatMessage{Role: "assistant",
				Content: structpb.NewNullValue(), ToolCalls: []*pb.ToolCall{{Id: &id, Type: &typ,
					Function: &pb.FunctionCall{Name: &name, Arguments: &args}}}}}},
			Usage: &pb.Usage{PromptTokens: int32(promptTokens), CompletionTokens: int32(len(pieces(args))),
				TotalTokens: int32(promptTokens + len(pieces(args)))},
		}, nil
	}
	text := strings.Join(words(prompt, n), " ")
	return &pb.ChatCompletion{
		Id: s.id(), Object: "chat.completion", Created: time.Now().Unix(), Model: req.Model,
		Choices: []*pb.Choice{{Index: 0, FinishReason: &finish,
			Message: &pb.ChatMessage{Role: "assistant", Content: structpb.NewStringValue(text)}}},
		Usage: &pb.Usage{PromptTokens: int32(promptTokens), CompletionTokens: int32(n), TotalTokens: int32(promptTokens + n)},
	}, nil
}

// Stream streams one word per chunk, then a finish chunk and, when asked, usage.
func (s *Simulator) Stream(ctx context.Context, req *providers.Request) (providers.Stream, error) {
	if err := sleep(ctx, s.cfg.TimeToFirstToken); err != nil {
		return nil, err
	}
	prompt, promptTokens := lastPrompt(req.Body)
	n, finish := s.maxTokens(req.Body)
	st := &stream{ctx: ctx, s: s, id: s.id(), created: time.Now().Unix(), model: req.Model,
		words: words(prompt, n), finish: finish, promptTokens: promptTokens,
		usage: req.IncludeUsage || req.Body.GetStreamOptions().GetIncludeUsage()}
	if name, args, id, ok := toolCall(req.Body, prompt); ok {
		// A tool call streams as OpenAI sends one: id, type and name first, then the
		// arguments in pieces, then finish_reason "tool_calls".
		st.words, st.finish, st.tool = pieces(args), "tool_calls", &toolStart{name: name, id: id}
	}
	return st, nil
}

type stream struct {
	ctx          context.Context
	s            *Simulator
	id, model    string
	created      int64
	words        []string
	finish       string
	promptTokens int
	usage        bool
	step         int
	tool         *toolStart // set: words are pieces of this call's arguments
}

// toolStart is what a streamed tool call's first piece names.
type toolStart struct{ name, id string }

// delta is step i's piece (1-based): a word of text, or a piece of tool arguments.
func (st *stream) delta(i int) *pb.ChatDelta {
	piece := st.words[i-1]
	if st.tool == nil {
		if i > 1 {
			piece = " " + piece
		}
		return &pb.ChatDelta{Content: &piece}
	}
	call := &pb.ToolCall{Index: new(int32), Function: &pb.FunctionCall{Arguments: &piece}}
	if i == 1 {
		typ := "function"
		call.Id, call.Type, call.Function.Name = &st.tool.id, &typ, &st.tool.name
	}
	return &pb.ChatDelta{ToolCalls: []*pb.ToolCall{call}}
}

func (st *stream) chunk() *pb.ChatCompletionChunk {
	return &pb.ChatCompletionChunk{Id: st.id, Object: "chat.completion.chunk", Created: st.created, Model: st.model}
}

func (st *stream) Recv() (*pb.ChatCompletionChunk, error) {
	i := st.step
	st.step++
	n := len(st.words)
	switch {
	case i == 0:
		c := st.chunk()
		role, empty := "assistant", ""
		d := &pb.ChatDelta{Role: &role, Content: &empty}
		if st.tool != nil {
			d.Content = nil
		}
		c.Choices = []*pb.ChunkChoice{{Delta: d}}
		return c, nil
	case i <= n:
		if err := sleep(st.ctx, st.s.cfg.TokenDelay); err != nil {
			return nil, err
		}
		c := st.chunk()
		c.Choices = []*pb.ChunkChoice{{Delta: st.delta(i)}}
		return c, nil
	case i == n+1:
		c := st.chunk()
		c.Choices = []*pb.ChunkChoice{{Delta: &pb.ChatDelta{}, FinishReason: &st.finish}}
		return c, nil
	case i == n+2 && st.usage:
		c := st.chunk()
		c.Usage = &pb.Usage{PromptTokens: int32(st.promptTokens), CompletionTokens: int32(n), TotalTokens: int32(st.promptTokens + n)}
		return c, nil
	}
	return nil, io.EOF
}

func (st *stream) Close() error { return nil }
