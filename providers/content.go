package providers

import (
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/openaijson"
)

// HasContent reports whether chunk starts the answer: text, reasoning, a refusal,
// a tool-call delta, or a finish (an empty answer is an answer). A role-only
// chunk, or one without choices, does not. A stream's call returns at its first
// chunk with content (first_token_timeout bounds the wait for it).
func HasContent(chunk *pb.ChatCompletionChunk) bool {
	for _, ch := range chunk.GetChoices() {
		d := ch.GetDelta()
		if d.GetContent() != "" || d.GetRefusal() != "" || len(d.GetToolCalls()) > 0 || ch.GetFinishReason() != "" {
			return true
		}
		for _, k := range openaijson.ReasoningKeys {
			if v := d.GetExtra().GetFields()[k]; v != nil && v.GetStringValue() != "" {
				return true
			}
		}
	}
	return false
}

// Answers reports whether a chat completion answers: a choice with a finish, or
// whose message carries anything besides its role (text, a refusal, tool calls,
// or a member Switchyard does not model: reasoning, audio, a function call). A
// 200 of choices with no message, or only a role, is an empty answer.
func Answers(c *pb.ChatCompletion) bool {
	for _, ch := range c.GetChoices() {
		if ch.GetFinishReason() != "" {
			return true
		}
		m := ch.GetMessage()
		if m.GetRefusal() != "" || len(m.GetToolCalls()) > 0 || len(m.GetExtra().GetFields()) > 0 {
			return true
		}
		switch v := m.GetContent(); v.GetKind().(type) {
		case *structpb.Value_StringValue:
			if v.GetStringValue() != "" {
				return true
			}
		case *structpb.Value_ListValue:
			if len(v.GetListValue().GetValues()) > 0 {
				return true
			}
		case *structpb.Value_StructValue:
			return true
		}
	}
	return false
}
