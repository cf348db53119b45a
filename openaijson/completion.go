package openaijson

import (
	"google.golang.org/protobuf/proto"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
)

// UnmarshalCompletion decodes a non-stream chat.completion directly into the
// generated struct, falling back to Unmarshal for anything unexpected, so its
// result is always what Unmarshal gives.
func UnmarshalCompletion(data []byte, c *pb.ChatCompletion) error {
	proto.Reset(c)
	d := chunkDecoder{s: scanner{data: data}}
	if d.completion(c) && d.s.atEnd() {
		return nil
	}
	return Unmarshal(data, c)
}

func (d *chunkDecoder) completion(c *pb.ChatCompletion) bool {
	h := envelope{&c.Id, &c.Object, &c.Created, &c.Model, &c.SystemFingerprint, &c.ServiceTier, &c.Usage, &c.Extra}
	return d.object(func(key []byte) bool {
		if string(key) != "choices" {
			return d.envelopeMember(key, h)
		}
		c.Choices = nil // a member given twice: the last counts
		return d.array(func() bool {
			ch := &pb.Choice{}
			c.Choices = append(c.Choices, ch)
			return d.completionChoice(ch)
		})
	})
}

func (d *chunkDecoder) completionChoice(ch *pb.Choice) bool {
	return d.object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "index":
			ch.Index, ok = d.int32()
		case "message":
			ch.Message = nil
			if d.s.peek() == 'n' {
				return d.s.literal("null")
			}
			ch.Message = &pb.ChatMessage{}
			ok = d.message(ch.Message)
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

func (d *chunkDecoder) message(m *pb.ChatMessage) bool {
	return d.object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "role":
			m.Role, ok = d.str()
		case "content":
			v, err := d.s.value()
			m.Content, ok = v, err == nil
		case "name":
			ok = d.optStr(&m.Name)
		case "tool_call_id":
			ok = d.optStr(&m.ToolCallId)
		case "refusal":
			ok = d.optStr(&m.Refusal)
		case "tool_calls":
			m.ToolCalls = nil
			ok = d.array(func() bool {
				tc := &pb.ToolCall{}
				m.ToolCalls = append(m.ToolCalls, tc)
				return d.toolCall(tc)
			})
		case "extra":
			return false
		default:
			ok = d.extra(&m.Extra, key)
		}
		return ok
	})
}
