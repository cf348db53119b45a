package openaijson

import (
	"strconv"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
)

// UnmarshalChunk decodes a chat.completion.chunk, the message decoded once per
// stream event. It fills the generated struct directly and falls back to
// Unmarshal (which names the offending member) for anything unexpected, so its
// result is always what Unmarshal gives.
// A stream's chunks are read with a ChunkReader, which shares what they repeat.
func UnmarshalChunk(data []byte, c *pb.ChatCompletionChunk) error {
	proto.Reset(c)
	d := chunkDecoder{s: scanner{data: data}}
	if d.chunk(c) && d.s.atEnd() {
		return nil
	}
	return Unmarshal(data, c)
}

// chunkDecoder reports failure as false; the caller then decodes generically.
// prev is the stream's chunk before (ChunkReader), whose repeated strings it
// reuses: the members every chunk repeats (id, object, model,
// system_fingerprint, service_tier) are prev's own strings when they are the
// same, not allocated again.
type chunkDecoder struct {
	s    scanner
	prev *pb.ChatCompletionChunk
	head headTrack
}

// headTrack follows what a chunk's members before "choices" were, for
// ChunkReader: end is where they end (0: unknown), plain says they were
// envelope members only (no usage, no unknown member), later that an envelope
// member came after "choices" too.
type headTrack struct {
	end          int
	choices      bool
	plain, later bool
}

// strAs reads a string, giving back was itself when the string is was
// (written without escapes): no allocation.
func (d *chunkDecoder) strAs(was string) (string, bool) {
	if d.s.equalStr(was) {
		return was, true
	}
	return d.str()
}

// optStrAs is optStr, pointing at was (another message's field, never written
// through) when the string is *was.
func (d *chunkDecoder) optStrAs(dst **string, was *string) bool {
	if was != nil && d.s.equalStr(*was) {
		*dst = was
		return true
	}
	return d.optStr(dst)
}

func (d *chunkDecoder) str() (string, bool) {
	if d.s.peek() != '"' {
		return "", false
	}
	v, err := d.s.str()
	return v, err == nil
}

// optStr reads a string or null (unset) into an optional field.
func (d *chunkDecoder) optStr(dst **string) bool {
	return d.optStrIn(dst, nil)
}

// optStrIn is optStr keeping the string in slot (when not nil) instead of a
// string of its own on the heap.
func (d *chunkDecoder) optStrIn(dst **string, slot *string) bool {
	*dst = nil
	if d.s.peek() == 'n' {
		return d.s.literal("null")
	}
	v, ok := d.str()
	if ok {
		if slot == nil {
			slot = new(string)
		}
		*slot = v
		*dst = slot
	}
	return ok
}

func (d *chunkDecoder) int64() (int64, bool) {
	if c := d.s.peek(); c != '-' && (c < '0' || c > '9') {
		return 0, false
	}
	num, err := d.s.number()
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(string(num), 10, 64)
	return n, err == nil
}

func (d *chunkDecoder) int32() (int32, bool) {
	n, ok := d.int64()
	return int32(n), ok && n >= -1<<31 && n < 1<<31
}

// extra keeps an unknown member.
func (d *chunkDecoder) extra(dst **structpb.Struct, key []byte) bool {
	v, err := d.s.value()
	if err != nil {
		return false
	}
	if *dst == nil {
		*dst = &structpb.Struct{Fields: map[string]*structpb.Value{}}
	}
	(*dst).Fields[string(key)] = v
	return true
}

// structOrNull reads an object into a Struct field (null leaves it unset).
func (d *chunkDecoder) structOrNull(dst **structpb.Struct) bool {
	*dst = nil
	switch d.s.peek() {
	case 'n':
		return d.s.literal("null")
	case '{':
		st, err := d.s.structValue()
		*dst = st
		return err == nil
	}
	return false
}

var errFallback = errSyntax

// object runs member per key; member returning false aborts.
func (d *chunkDecoder) object(member func(key []byte) bool) bool {
	if d.s.peek() != '{' {
		return false
	}
	return d.s.object(func(key []byte) error {
		if !member(key) {
			return errFallback
		}
		return nil
	}) == nil
}

func (d *chunkDecoder) array(item func() bool) bool {
	if d.s.peek() == 'n' {
		return d.s.literal("null")
	}
	if d.s.peek() != '[' {
		return false
	}
	return d.s.array(func(int) error {
		if !item() {
			return errFallback
		}
		return nil
	}) == nil
}

func (d *chunkDecoder) chunk(c *pb.ChatCompletionChunk) bool {
	return d.object(d.chunkMember(c))
}

// chunkMember decodes one member of a chunk into c.
func (d *chunkDecoder) chunkMember(c *pb.ChatCompletionChunk) func(key []byte) bool {
	h := envelope{&c.Id, &c.Object, &c.Created, &c.Model, &c.SystemFingerprint, &c.ServiceTier, &c.Usage, &c.Extra}
	return func(key []byte) bool {
		if string(key) != "choices" {
			d.noteHead(key)
			return d.envelopeMember(key, h)
		}
		if !d.head.choices {
			d.head.choices = true
			if p := d.s.pos - len(`"choices":`); p > 0 && string(d.s.data[p:d.s.pos]) == `"choices":` {
				d.head.end = p // written plainly, as the next chunk's will be
			}
		}
		c.Choices = nil // a member given twice: the last counts
		return d.array(func() bool {
			if len(c.Choices) == 0 {
				b := &choiceBlock{}
				b.choices[0] = &b.choice
				c.Choices = b.choices[:]
				return d.choice(&b.choice, b)
			}
			ch := &pb.ChunkChoice{}
			c.Choices = append(c.Choices, ch)
			return d.choice(ch, nil)
		})
	}
}

// noteHead notes a member other than choices for headTrack.
func (d *chunkDecoder) noteHead(key []byte) {
	switch string(key) {
	case "id", "object", "created", "model", "system_fingerprint", "service_tier":
		d.head.later = d.head.later || d.head.choices
	default:
		d.head.plain = d.head.plain && d.head.choices
	}
}

// choiceBlock is a chunk's first choice, its delta, the one-element slice that
// holds it and its content, in one allocation instead of five: most chunks
// have one choice whose delta is one string.
type choiceBlock struct {
	choice    pb.ChunkChoice
	delta     pb.ChatDelta
	choices   [1]*pb.ChunkChoice
	content   string
	deltaUsed bool // a delta given twice: the last counts, in a ChatDelta of its own
}

// envelope points at the members a chat.completion and a chat.completion.chunk
// share, so one decoder fills both.
type envelope struct {
	id, object        *string
	created           *int64
	model             *string
	fingerprint, tier **string
	usage             **pb.Usage
	extra             **structpb.Struct
}

// envelopeMember decodes one top-level member other than choices.
func (d *chunkDecoder) envelopeMember(key []byte, h envelope) bool {
	var ok bool
	p := d.prev // nil for a completion: every Get is then ""
	var fingerprint, tier *string
	if p != nil {
		fingerprint, tier = p.SystemFingerprint, p.ServiceTier
	}
	switch string(key) {
	case "id":
		*h.id, ok = d.strAs(p.GetId())
	case "object":
		*h.object, ok = d.strAs(p.GetObject())
	case "created":
		*h.created, ok = d.int64()
	case "model":
		*h.model, ok = d.strAs(p.GetModel())
	case "system_fingerprint":
		ok = d.optStrAs(h.fingerprint, fingerprint)
	case "service_tier":
		ok = d.optStrAs(h.tier, tier)
	case "usage":
		*h.usage = nil
		if d.s.peek() == 'n' {
			return d.s.literal("null")
		}
		*h.usage = &pb.Usage{}
		ok = d.usage(*h.usage)
	case "extra":
		return false // a member named like the extra field: let the generic decoder judge
	default:
		ok = d.extra(h.extra, key)
	}
	return ok
}

// choice decodes a choice; b, when not nil, is the block ch lives in.
func (d *chunkDecoder) choice(ch *pb.ChunkChoice, b *choiceBlock) bool {
	return d.object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "index":
			ch.Index, ok = d.int32()
		case "delta":
			ch.Delta = nil
			if d.s.peek() == 'n' {
				return d.s.literal("null")
			}
			if b != nil && !b.deltaUsed {
				b.deltaUsed = true
				ch.Delta = &b.delta
			} else {
				ch.Delta = &pb.ChatDelta{}
			}
			ok = d.delta(ch.Delta, b)
		case "finish_reason":
			ok = d.optStr(&ch.FinishReason)
		case "logprobs":
			ok = d.structOrNull(&ch.Logprobs)
		case "extra":
			return false
		default:
			ok = d.extra(&ch.Extra, key)
		}
		return ok
	})
}

// delta decodes a delta; b, when not nil, holds its content.
func (d *chunkDecoder) delta(dl *pb.ChatDelta, b *choiceBlock) bool {
	return d.object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "role":
			ok = d.optStr(&dl.Role)
		case "content":
			if b != nil {
				ok = d.optStrIn(&dl.Content, &b.content)
			} else {
				ok = d.optStr(&dl.Content)
			}
		case "refusal":
			ok = d.optStr(&dl.Refusal)
		case "tool_calls":
			dl.ToolCalls = nil
			ok = d.array(func() bool {
				tc := &pb.ToolCall{}
				dl.ToolCalls = append(dl.ToolCalls, tc)
				return d.toolCall(tc)
			})
		case "extra":
			return false
		default:
			ok = d.extra(&dl.Extra, key)
		}
		return ok
	})
}

func (d *chunkDecoder) toolCall(tc *pb.ToolCall) bool {
	return d.object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "index":
			tc.Index = nil
			if d.s.peek() == 'n' {
				return d.s.literal("null")
			}
			var n int32
			n, ok = d.int32()
			tc.Index = &n
		case "id":
			ok = d.optStr(&tc.Id)
		case "type":
			ok = d.optStr(&tc.Type)
		case "function":
			tc.Function = nil
			if d.s.peek() == 'n' {
				return d.s.literal("null")
			}
			tc.Function = &pb.FunctionCall{}
			ok = d.object(func(k []byte) bool {
				switch string(k) {
				case "name":
					return d.optStr(&tc.Function.Name)
				case "arguments":
					return d.optStr(&tc.Function.Arguments)
				case "extra":
					return false
				}
				return d.extra(&tc.Function.Extra, k)
			})
		case "extra":
			return false
		default:
			ok = d.extra(&tc.Extra, key)
		}
		return ok
	})
}

func (d *chunkDecoder) usage(u *pb.Usage) bool {
	return d.object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "prompt_tokens":
			u.PromptTokens, ok = d.int32()
		case "completion_tokens":
			u.CompletionTokens, ok = d.int32()
		case "total_tokens":
			u.TotalTokens, ok = d.int32()
		case "prompt_tokens_details":
			ok = d.structOrNull(&u.PromptTokensDetails)
		case "completion_tokens_details":
			ok = d.structOrNull(&u.CompletionTokensDetails)
		case "extra":
			return false
		default:
			ok = d.extra(&u.Extra, key)
		}
		return ok
	})
}
