package providers

import (
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
