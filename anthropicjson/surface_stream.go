package anthropicjson

import (
	"encoding/json"
	"fmt"
	"strings"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
)

// EventWriter turns the chunks of an OpenAI chat completion stream into
// Anthropic's stream events, as the Anthropic SDKs read them: message_start (on
// the first chunk, usage zero: the chat wire counts tokens at the end), then per
// content block content_block_start, its deltas (thinking_delta for reasoning,
// text_delta, input_json_delta for tool call arguments) and content_block_stop,
// indexes counting from 0 in order; End writes message_delta (stop_reason and the
// usage, input tokens included) and message_stop. Only choice 0 is read. A
// stream that does not end well is never ended with End: the caller writes an
// error event instead.
type EventWriter struct {
	model string
	emit  func(typ string, data []byte) error

	started bool
	// open is the index of the open block (-1: none), kind its type.
	open int
	kind string
	next int
	// tools are the tool calls by their index; live is the one whose block is
	// open (nil: none), held those waiting for their block, in order.
	tools  map[int32]*toolState
	live   *toolState
	held   []*toolState
	finish string
	// refused: the answer was a refusal (stop_reason refusal).
	refused bool
	usage   *pb.Usage
}

// NewEventWriter returns a writer calling emit with each event's type and data.
// model names the model in message_start when the first chunk names none.
func NewEventWriter(model string, emit func(typ string, data []byte) error) *EventWriter {
	return &EventWriter{model: model, emit: emit, open: -1}
}

// Chunk writes the events c makes.
func (w *EventWriter) Chunk(c *pb.ChatCompletionChunk) error {
	if !w.started {
		w.started = true
		model := c.GetModel()
		if model == "" {
			model = w.model
		}
		start := MessageStartEvent{Type: EventMessageStart, Message: Response{ID: MessageID(c.GetId()), Type: "message",
			Role: "assistant", Model: model, Usage: Usage{}}}
		if err := w.event(EventMessageStart, start); err != nil {
			return err
		}
	}
	if u := c.GetUsage(); u != nil {
		w.usage = u
	}
	for _, ch := range c.GetChoices() {
		if ch.GetIndex() != 0 {
			continue
		}
		if err := w.delta(ch.GetDelta()); err != nil {
			return err
		}
		if f := ch.GetFinishReason(); f != "" {
			w.finish = f
		}
	}
	return nil
}

func (w *EventWriter) delta(d *pb.ChatDelta) error {
	if r := surfaceReasoning(d.GetExtra()); r != "" {
		if err := w.ensure(BlockThinking, ContentBlock{Type: BlockThinking}); err != nil {
			return err
		}
		if err := w.blockDelta(Delta{Type: DeltaThinking, Thinking: r}); err != nil {
			return err
		}
	}
	text := d.GetContent() + d.GetRefusal()
	if text != "" {
		w.refused = w.refused || d.GetRefusal() != ""
		if err := w.ensure(BlockText, ContentBlock{Type: BlockText}); err != nil {
			return err
		}
		if err := w.blockDelta(Delta{Type: DeltaText, Text: text}); err != nil {
			return err
		}
	}
	for _, tc := range d.GetToolCalls() {
		if err := w.toolCall(tc); err != nil {
			return err
		}
	}
	return nil
}

// toolCall writes a tool call's pieces: its first piece (the one with its id)
// starts a tool_use block, each argument piece is an input_json_delta on that
// block. Blocks run one after another, and a delta after its block's stop is not
// Anthropic's wire: a call that begins while the open call's arguments are not
// yet whole is held, its pieces gathered, and its block written when the open
// call's arguments are whole (or at the end). A piece for a call whose block
// already stopped is a malformed stream.
func (w *EventWriter) toolCall(tc *pb.ToolCall) error {
	if w.tools == nil {
		w.tools = map[int32]*toolState{}
	}
	i := tc.GetIndex()
	st, seen := w.tools[i]
	if !seen {
		st = &toolState{block: -1, id: tc.GetId(), name: tc.GetFunction().GetName()}
		w.tools[i] = st
		if err := w.release(); err != nil { // the held calls whose turn has come go first
			return err
		}
		if len(w.held) > 0 || (w.live != nil && !w.live.whole()) {
			w.held = append(w.held, st)
		} else if err := w.startTool(st); err != nil {
			return err
		}
	}
	args := tc.GetFunction().GetArguments()
	if args == "" {
		return nil
	}
	switch {
	case st == w.live:
		st.add(args, false)
		if err := w.argsDelta(st.block, args); err != nil {
			return err
		}
		return w.release()
	case st.block < 0:
		st.add(args, true)
		return nil
	case strings.TrimSpace(args) == "":
		return nil // white space after whole arguments: nothing to say
	}
	return fmt.Errorf("%w: arguments of tool call %d after its content block stopped", ErrMalformed, i)
}

// toolState is a tool call's block (-1: held), its arguments so far when held,
// and how far they are from whole.
type toolState struct {
	block    int
	id, name string
	args     strings.Builder
	shape    jsonShape
}

// add takes a piece of the call's arguments, keeping it when the call is held.
func (t *toolState) add(piece string, keep bool) {
	if keep {
		t.args.WriteString(piece)
	}
	t.shape.read(piece)
}

// whole reports whether the arguments so far are a whole JSON object or array:
// no piece can follow them. It costs nothing: the pieces were read as they came.
func (t *toolState) whole() bool { return t.shape.whole() }

// jsonShape follows the nesting of JSON read piece by piece (arguments streamed
// in pieces of a few bytes), to tell when an object or array has closed, without
// reading what came before again.
type jsonShape struct {
	depth          int
	opened, broken bool // a bracket was opened; a bracket closed more than opened
	inString, esc  bool
}

func (j *jsonShape) read(piece string) {
	for i := 0; i < len(piece); i++ {
		c := piece[i]
		switch {
		case j.inString:
			switch {
			case j.esc:
				j.esc = false
			case c == '\\':
				j.esc = true
			case c == '"':
				j.inString = false
			}
		case c == '"':
			j.inString = true
		case c == '{' || c == '[':
			j.depth++
			j.opened = true
		case c == '}' || c == ']':
			j.depth--
			j.broken = j.broken || j.depth < 0
		}
	}
}

func (j *jsonShape) whole() bool { return j.opened && !j.broken && j.depth == 0 && !j.inString }

func (w *EventWriter) startTool(st *toolState) error {
	if err := w.start(BlockToolUse, ContentBlock{Type: BlockToolUse, ID: st.id, Name: st.name, Input: json.RawMessage("{}")}); err != nil {
		return err
	}
	st.block, w.live = w.open, st
	return nil
}

// release writes the held calls whose turn has come: each while the open
// call's arguments are whole (all of them at the end).
func (w *EventWriter) release() error {
	for len(w.held) > 0 && (w.live == nil || w.live.whole()) {
		st := w.held[0]
		w.held = w.held[1:]
		if err := w.startTool(st); err != nil {
			return err
		}
		if st.args.Len() > 0 {
			if err := w.argsDelta(st.block, st.args.String()); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *EventWriter) argsDelta(block int, args string) error {
	return w.event(EventContentBlockDelta, ContentBlockDeltaEvent{Type: EventContentBlockDelta, Index: block,
		Delta: Delta{Type: DeltaInputJSON, PartialJSON: args}})
}

// ensure makes the open block one of kind, starting b if it is not.
func (w *EventWriter) ensure(kind string, b ContentBlock) error {
	if w.open >= 0 && w.kind == kind {
		return nil
	}
	return w.start(kind, b)
}

func (w *EventWriter) start(kind string, b ContentBlock) error {
	if err := w.stop(); err != nil {
		return err
	}
	w.live = nil
	w.open, w.kind = w.next, kind
	w.next++
	return w.event(EventContentBlockStart, ContentBlockStartEvent{Type: EventContentBlockStart, Index: w.open, ContentBlock: b})
}

func (w *EventWriter) blockDelta(d Delta) error {
	return w.event(EventContentBlockDelta, ContentBlockDeltaEvent{Type: EventContentBlockDelta, Index: w.open, Delta: d})
}

// stop closes the open block, if any.
func (w *EventWriter) stop() error {
	if w.open < 0 {
		return nil
	}
	i := w.open
	w.open = -1
	return w.event(EventContentBlockStop, ContentBlockStopEvent{Type: EventContentBlockStop, Index: i})
}

// End writes the end of a stream that ended well: the open block's stop,
// message_delta and message_stop. A stream with no chunk at all gets its
// message_start first, so that what the client reads is a whole message.
func (w *EventWriter) End() error {
	if !w.started {
		if err := w.Chunk(&pb.ChatCompletionChunk{}); err != nil {
			return err
		}
	}
	w.live = nil
	if err := w.release(); err != nil {
		return err
	}
	if err := w.stop(); err != nil {
		return err
	}
	finish := w.finish
	if w.refused && (finish == "stop" || finish == "") {
		finish = "content_filter"
	}
	stop := StopReasonFor(finish)
	u := surfaceUsage(w.usage)
	delta := MessageDeltaEvent{Type: EventMessageDelta, Delta: MessageDelta{StopReason: &stop},
		Usage: DeltaUsage{InputTokens: &u.InputTokens, OutputTokens: u.OutputTokens, CacheReadInputTokens: u.CacheReadInputTokens,
			CacheCreationInputTokens: u.CacheCreationInputTokens}}
	if err := w.event(EventMessageDelta, delta); err != nil {
		return err
	}
	return w.event(EventMessageStop, TypeOnlyEvent{Type: EventMessageStop})
}

// Usage is the usage the stream reported so far (nil: none yet).
func (w *EventWriter) Usage() *pb.Usage { return w.usage }

func (w *EventWriter) event(typ string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return w.emit(typ, data)
}
