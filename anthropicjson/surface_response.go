package anthropicjson

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
)

// FromCompletion answers a /v1/messages request with a chat completion from a
// target that speaks OpenAI's wire (its first choice): reasoning_content → a
// thinking block (without signature), the content (and a refusal) → a text block,
// tool_calls → tool_use blocks (a call whose arguments the caller's max_tokens
// cut has input {}), finish_reason → stop_reason (see StopReasonFor),
// usage → input tokens without the cached ones, output tokens, and the cached
// ones (prompt_tokens_details.cached_tokens) as cache_read_input_tokens. The id
// is "msg_" and the completion's id without "chatcmpl-". model names the model
// in the answer ("" keeps the completion's).
func FromCompletion(c *pb.ChatCompletion, model string) ([]byte, error) {
	if len(c.GetChoices()) == 0 {
		return nil, errors.New("the completion has no choices")
	}
	if model == "" {
		model = c.GetModel()
	}
	ch := c.GetChoices()[0]
	m := ch.GetMessage()
	resp := Response{ID: MessageID(c.GetId()), Type: "message", Role: "assistant", Model: model}
	if r := surfaceReasoning(m.GetExtra()); r != "" {
		resp.Content = append(resp.Content, ContentBlock{Type: BlockThinking, Thinking: r})
	}
	text := surfaceText(m.GetContent())
	if m.GetRefusal() != "" {
		text += m.GetRefusal()
	}
	if text != "" || (len(m.GetToolCalls()) == 0 && resp.Content == nil) {
		resp.Content = append(resp.Content, ContentBlock{Type: BlockText, Text: text})
	}
	finish := ch.GetFinishReason()
	for _, tc := range m.GetToolCalls() {
		args := strings.TrimSpace(tc.GetFunction().GetArguments())
		if args == "" {
			args = "{}"
		}
		if !json.Valid([]byte(args)) || args[0] != '{' {
			if finish != "length" {
				return nil, errors.New("tool call " + tc.GetId() + " has arguments that are not a JSON object")
			}
			// Cut by the caller's own max_tokens: answered as Anthropic answers
			// it, a tool_use block whose input is what could be read (nothing)
			// and stop_reason max_tokens, which says the call is not whole.
			args = "{}"
		}
		resp.Content = append(resp.Content, ContentBlock{Type: BlockToolUse, ID: tc.GetId(), Name: tc.GetFunction().GetName(),
			Input: json.RawMessage(args)})
	}
	if m.GetRefusal() != "" && finish == "stop" {
		finish = "content_filter"
	}
	stop := StopReasonFor(finish)
	resp.StopReason = &stop
	resp.Usage = surfaceUsage(c.GetUsage())
	return json.Marshal(resp)
}

// MessageID is a message id for a chat completion id: "msg_" and the id without
// "chatcmpl-" (a random one when it has none).
func MessageID(id string) string {
	id = strings.TrimPrefix(id, "chatcmpl-")
	if id == "" {
		var b [12]byte
		_, _ = rand.Read(b[:])
		id = hex.EncodeToString(b[:])
	}
	return "msg_" + id
}

// StopReasonFor is Anthropic's stop_reason for an OpenAI finish_reason: length →
// max_tokens, tool_calls and function_call → tool_use, content_filter → refusal,
// anything else (stop included: which stop sequence matched, the chat wire does
// not say) → end_turn.
func StopReasonFor(finish string) string {
	switch finish {
	case "length":
		return StopMaxTokens
	case "tool_calls", "function_call":
		return StopToolUse
	case "content_filter":
		return StopRefusal
	}
	return StopEndTurn
}

// surfaceReasoningKeys are the members OpenAI-compatible upstreams put reasoning in.
var surfaceReasoningKeys = []string{"reasoning_content", "reasoning"}

func surfaceReasoning(extra *structpb.Struct) string {
	for _, k := range surfaceReasoningKeys {
		if s := extra.GetFields()[k].GetStringValue(); s != "" {
			return s
		}
	}
	return ""
}

// surfaceText is a chat message's content as text: the string, or its text parts.
func surfaceText(v *structpb.Value) string {
	if l := v.GetListValue(); l != nil {
		var b strings.Builder
		for _, p := range l.GetValues() {
			f := p.GetStructValue().GetFields()
			if f["type"].GetStringValue() == "text" {
				b.WriteString(f["text"].GetStringValue())
			}
		}
		return b.String()
	}
	return v.GetStringValue()
}

// surfaceUsage is Anthropic's usage for OpenAI's: input_tokens excludes the cached
// tokens, which are cache_read_input_tokens (cache writes the chat wire does not
// count: 0).
func surfaceUsage(u *pb.Usage) Usage {
	cached := int(u.GetPromptTokensDetails().GetFields()["cached_tokens"].GetNumberValue())
	cached = min(max(cached, 0), int(u.GetPromptTokens()))
	zero := 0
	return Usage{InputTokens: int(u.GetPromptTokens()) - cached, OutputTokens: int(u.GetCompletionTokens()),
		CacheReadInputTokens: &cached, CacheCreationInputTokens: &zero}
}
