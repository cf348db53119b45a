package anthropicjson

import (
	"encoding/json"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
)

// ChunkTranslator turns one Anthropic stream's events into OpenAI
// chat.completion.chunk messages, framed as OpenAI's SDKs expect:
//   - message_start: the first chunk, role "assistant" and content "";
//   - every chunk has the message's id and model, one created time and one
//     choice of index 0 (but the usage chunk, which has none);
//   - a tool_use block is tool call number k (0, 1, ... in order): its first
//     delta has index, id, type "function", name and arguments "", each
//     input_json_delta then an argument piece under the same index (a call
//     that had none gets its start's input, {} when empty, at its block's end);
//   - thinking_delta is a reasoning_content delta; at the end of a thinking or
//     redacted_thinking block one delta carries the whole signed block in
//     thinking_blocks (as ToCompletion writes them);
//   - message_delta's stop_reason is the finish_reason chunk (FinishReason), an
//     empty delta (and the matched stop_sequence as the choice's stop_reason, as
//     ToCompletion writes it); message_stop then the usage chunk (choices [], usage as
//     ToCompletion counts it) when IncludeUsage, and Complete reports true (a
//     message_stop before a stop_reason wraps ErrMalformed: the stream was cut).
//
// ping, citations and server tool blocks give nothing; an "error" event is an
// *APIError; an event out of order or not JSON wraps ErrMalformed. Event types
// Anthropic may add later are ignored, as its documentation asks.
type ChunkTranslator struct {
	// IncludeUsage asks for the usage chunk.
	IncludeUsage bool
	created      int64
	started      bool
	complete     bool
	finished     bool
	id, model    string
	usage        Usage
	// blocks are the open content blocks by their index.
	blocks    map[int]*openBlock
	toolCalls int32
}

type openBlock struct {
	typ       string
	toolIndex int32
	block     ContentBlock // thinking: text and signature so far
	// args: a piece of a tool call's arguments went out.
	args bool
}

// NewChunkTranslator starts translating a stream created at now.
func NewChunkTranslator(includeUsage bool, now time.Time) *ChunkTranslator {
	return &ChunkTranslator{IncludeUsage: includeUsage, created: now.Unix(), blocks: map[int]*openBlock{}}
}

// Complete reports whether message_stop has arrived: a stream that ends
// before it is incomplete.
func (t *ChunkTranslator) Complete() bool { return t.complete }

// Finished reports whether the finish chunk was made (message_delta's
// stop_reason): the answer is whole, whatever fails before message_stop.
func (t *ChunkTranslator) Finished() bool { return t.finished }

// Translate takes one event (its "event:" type and data) and returns the
// chunks it makes, usually one, none for some. typ may be empty: the data's
// own "type" counts when the two differ.
func (t *ChunkTranslator) Translate(typ string, data []byte) ([]*pb.ChatCompletionChunk, error) {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, malformed(typ, err)
	}
	if head.Type != "" {
		typ = head.Type
	}
	switch typ {
	case EventPing:
		return nil, nil
	case EventError:
		var e ErrorBody
		if err := json.Unmarshal(data, &e); err != nil {
			return nil, malformed(typ, err)
		}
		return nil, &APIError{Type: e.Error.Type, Message: e.Error.Message}
	case EventMessageStart:
		return t.messageStart(data)
	}
	if !t.started {
		return nil, fmt.Errorf("%w: %s before message_start", ErrMalformed, typ)
	}
	if t.complete {
		return nil, fmt.Errorf("%w: %s after message_stop", ErrMalformed, typ)
	}
	switch typ {
	case EventContentBlockStart:
		return t.blockStart(data)
	case EventContentBlockDelta:
		return t.blockDelta(data)
	case EventContentBlockStop:
		return t.blockStop(data)
	case EventMessageDelta:
		return t.messageDelta(data)
	case EventMessageStop:
		return t.messageStop()
	}
	return nil, nil
}

func malformed(typ string, err error) error {
	return fmt.Errorf("%w: %s event: %v", ErrMalformed, typ, err)
}

func (t *ChunkTranslator) messageStart(data []byte) ([]*pb.ChatCompletionChunk, error) {
	if t.started {
		return nil, fmt.Errorf("%w: a second message_start", ErrMalformed)
	}
	var e MessageStartEvent
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, malformed(EventMessageStart, err)
	}
	t.started = true
	t.id, t.model, t.usage = e.Message.ID, e.Message.Model, e.Message.Usage
	role, empty := "assistant", ""
	return t.one(&pb.ChatDelta{Role: &role, Content: &empty}, nil), nil
}

func (t *ChunkTranslator) blockStart(data []byte) ([]*pb.ChatCompletionChunk, error) {
	var e ContentBlockStartEvent
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, malformed(EventContentBlockStart, err)
	}
	if _, open := t.blocks[e.Index]; open {
		return nil, fmt.Errorf("%w: content block %d started twice", ErrMalformed, e.Index)
	}
	b := &openBlock{typ: e.ContentBlock.Type, block: e.ContentBlock}
	t.blocks[e.Index] = b
	switch b.typ {
	case BlockText:
		if e.ContentBlock.Text != "" {
			return t.one(&pb.ChatDelta{Content: &e.ContentBlock.Text}, nil), nil
		}
	case BlockToolUse:
		b.toolIndex = t.toolCalls
		t.toolCalls++
		index, id, typ, name, args := b.toolIndex, e.ContentBlock.ID, "function", e.ContentBlock.Name, ""
		return t.one(&pb.ChatDelta{ToolCalls: []*pb.ToolCall{{
			Index: &index, Id: &id, Type: &typ, Function: &pb.FunctionCall{Name: &name, Arguments: &args},
		}}}, nil), nil
	case BlockThinking:
		if e.ContentBlock.Thinking != "" {
			return t.one(reasoningDelta(e.ContentBlock.Thinking), nil), nil
		}
	}
	return nil, nil
}

func reasoningDelta(s string) *pb.ChatDelta {
	return &pb.ChatDelta{Extra: &structpb.Struct{Fields: map[string]*structpb.Value{ReasoningContent: structpb.NewStringValue(s)}}}
}

func (t *ChunkTranslator) blockDelta(data []byte) ([]*pb.ChatCompletionChunk, error) {
	var e ContentBlockDeltaEvent
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, malformed(EventContentBlockDelta, err)
	}
	b, open := t.blocks[e.Index]
	if !open {
		return nil, fmt.Errorf("%w: delta for content block %d, which is not open", ErrMalformed, e.Index)
	}
	d := e.Delta
	switch {
	case d.Type == DeltaText && b.typ == BlockText:
		if d.Text != "" {
			return t.one(&pb.ChatDelta{Content: &d.Text}, nil), nil
		}
	case d.Type == DeltaInputJSON && b.typ == BlockToolUse:
		if d.PartialJSON != "" {
			b.args = true
			index := b.toolIndex
			return t.one(&pb.ChatDelta{ToolCalls: []*pb.ToolCall{{
				Index: &index, Function: &pb.FunctionCall{Arguments: &d.PartialJSON},
			}}}, nil), nil
		}
	case d.Type == DeltaThinking && b.typ == BlockThinking:
		b.block.Thinking += d.Thinking
		if d.Thinking != "" {
			return t.one(reasoningDelta(d.Thinking), nil), nil
		}
	case d.Type == DeltaSignature && b.typ == BlockThinking:
		b.block.Signature += d.Signature
	case (d.Type == DeltaText || d.Type == DeltaInputJSON || d.Type == DeltaThinking || d.Type == DeltaSignature) &&
		(b.typ == BlockText || b.typ == BlockToolUse || b.typ == BlockThinking):
		return nil, fmt.Errorf("%w: %s for a %s block", ErrMalformed, d.Type, b.typ)
	}
	return nil, nil // citations, delta types to come, deltas of blocks with no OpenAI form
}

func (t *ChunkTranslator) blockStop(data []byte) ([]*pb.ChatCompletionChunk, error) {
	var e ContentBlockStopEvent
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, malformed(EventContentBlockStop, err)
	}
	b, open := t.blocks[e.Index]
	if !open {
		return nil, fmt.Errorf("%w: content block %d stopped but not open", ErrMalformed, e.Index)
	}
	delete(t.blocks, e.Index)
	if b.typ == BlockToolUse && !b.args {
		// A call with no arguments (no input_json_delta, or only empty ones):
		// its arguments are the start's input, {} when empty, so that they are
		// JSON, as a non-stream answer's are (the SDKs parse them).
		args := string(b.block.Input)
		if len(b.block.Input) == 0 || string(b.block.Input) == "null" {
			args = "{}"
		}
		index := b.toolIndex
		return t.one(&pb.ChatDelta{ToolCalls: []*pb.ToolCall{{Index: &index, Function: &pb.FunctionCall{Arguments: &args}}}}, nil), nil
	}
	if b.typ != BlockThinking && b.typ != BlockRedactedThinking {
		return nil, nil
	}
	v, err := blockValue(b.block)
	if err != nil {
		return nil, malformed(EventContentBlockStop, err)
	}
	return t.one(&pb.ChatDelta{Extra: &structpb.Struct{Fields: map[string]*structpb.Value{
		ThinkingBlocks: structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{v}}),
	}}}, nil), nil
}

func (t *ChunkTranslator) messageDelta(data []byte) ([]*pb.ChatCompletionChunk, error) {
	var e MessageDeltaEvent
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, malformed(EventMessageDelta, err)
	}
	u := e.Usage
	t.usage.OutputTokens = u.OutputTokens
	if u.InputTokens != nil {
		t.usage.InputTokens = *u.InputTokens
	}
	if u.CacheReadInputTokens != nil {
		t.usage.CacheReadInputTokens = u.CacheReadInputTokens
	}
	if u.CacheCreationInputTokens != nil {
		t.usage.CacheCreationInputTokens = u.CacheCreationInputTokens
	}
	if e.Delta.StopReason == nil || t.finished {
		return nil, nil
	}
	t.finished = true
	finish := FinishReason(*e.Delta.StopReason)
	out := t.one(&pb.ChatDelta{}, &finish)
	if *e.Delta.StopReason == StopStopSequence && e.Delta.StopSequence != nil {
		// As ToCompletion: the matched sequence as the choice's stop_reason.
		out[0].Choices[0].Extra = &structpb.Struct{Fields: map[string]*structpb.Value{"stop_reason": structpb.NewStringValue(*e.Delta.StopSequence)}}
	}
	return out, nil
}

// messageStop ends the stream: the usage chunk when asked for. A message_stop
// before message_delta gave the stop_reason is a stream cut short (Anthropic
// always sends it): no finish is made up for it.
func (t *ChunkTranslator) messageStop() ([]*pb.ChatCompletionChunk, error) {
	if !t.finished {
		return nil, fmt.Errorf("%w: message_stop before a stop_reason", ErrMalformed)
	}
	t.complete = true
	var out []*pb.ChatCompletionChunk
	if t.IncludeUsage {
		u := t.usage
		out = append(out, &pb.ChatCompletionChunk{
			Id: t.id, Object: "chat.completion.chunk", Created: t.created, Model: t.model,
			Usage: completionUsage(u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens),
		})
	}
	return out, nil
}

// one is a chunk of one choice (index 0) with delta and finish.
func (t *ChunkTranslator) one(delta *pb.ChatDelta, finish *string) []*pb.ChatCompletionChunk {
	return []*pb.ChatCompletionChunk{{
		Id: t.id, Object: "chat.completion.chunk", Created: t.created, Model: t.model,
		Choices: []*pb.ChunkChoice{{Index: 0, Delta: delta, FinishReason: finish}},
	}}
}
