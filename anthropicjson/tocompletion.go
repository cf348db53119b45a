package anthropicjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
)

// Usage detail members (in prompt_tokens_details) for Anthropic's cache counts.
const (
	// DetailCachedTokens is OpenAI's own: prompt tokens read from the cache.
	DetailCachedTokens = "cached_tokens"
	// DetailCacheCreationTokens: prompt tokens written to the cache (Anthropic's
	// cache_creation_input_tokens), which OpenAI has no field for.
	DetailCacheCreationTokens = "cache_creation_tokens"
)

// FinishReason maps Anthropic's stop_reason onto OpenAI's finish_reason:
// end_turn, stop_sequence and pause_turn (a server tool loop paused; the
// answer so far is whole) are "stop", max_tokens and
// model_context_window_exceeded "length", tool_use "tool_calls", refusal
// "content_filter". Another value passes as it is; none is "stop".
func FinishReason(stopReason string) string {
	switch stopReason {
	case StopEndTurn, StopStopSequence, StopPauseTurn, "":
		return "stop"
	case StopMaxTokens, "model_context_window_exceeded":
		return "length"
	case StopToolUse:
		return "tool_calls"
	case StopRefusal:
		return "content_filter"
	}
	return stopReason
}

// ToCompletion translates Anthropic's message (the body of a successful POST
// /v1/messages) into an OpenAI chat.completion created now. An error body is an
// *APIError; anything else that is not a message wraps ErrMalformed.
func ToCompletion(body []byte) (*pb.ChatCompletion, error) {
	return ToCompletionAt(body, time.Now())
}

// ToCompletionAt is ToCompletion with the creation time given.
func ToCompletionAt(body []byte, now time.Time) (*pb.ChatCompletion, error) {
	if typ, msg, ok := ParseError(body); ok {
		return nil, &APIError{Type: typ, Message: msg}
	}
	var r Response
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if r.Type != "message" {
		return nil, fmt.Errorf("%w: type %q, not a message", ErrMalformed, r.Type)
	}
	if len(r.Content) == 0 && r.StopReason == nil {
		return nil, ErrEmptyMessage
	}
	msg, err := completionMessage(r.Content)
	if err != nil {
		return nil, err
	}
	finish := FinishReason(deref(r.StopReason))
	choice := &pb.Choice{Index: 0, Message: msg, FinishReason: &finish}
	if deref(r.StopReason) == StopStopSequence && r.StopSequence != nil {
		// vLLM's convention: the matched stop sequence as the choice's stop_reason.
		choice.Extra = &structpb.Struct{Fields: map[string]*structpb.Value{"stop_reason": structpb.NewStringValue(*r.StopSequence)}}
	}
	return &pb.ChatCompletion{
		Id:      r.ID,
		Object:  "chat.completion",
		Created: now.Unix(),
		Model:   r.Model,
		Choices: []*pb.Choice{choice},
		Usage:   completionUsage(r.Usage.InputTokens, r.Usage.OutputTokens, r.Usage.CacheReadInputTokens, r.Usage.CacheCreationInputTokens),
	}, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// completionMessage: text blocks concatenated into content (null when there is
// none but tool calls), tool_use blocks as tool_calls, thinking as
// reasoning_content plus the signed blocks in thinking_blocks. Other blocks
// (server tools and their results) have no OpenAI form and are left out.
func completionMessage(blocks []ContentBlock) (*pb.ChatMessage, error) {
	var text, reasoning strings.Builder
	var thinking []*structpb.Value
	hasText := false
	msg := &pb.ChatMessage{Role: "assistant"}
	for i, b := range blocks {
		switch b.Type {
		case BlockText:
			hasText = true
			text.WriteString(b.Text)
		case BlockToolUse:
			args, err := compactJSON(b.Input)
			if err != nil {
				return nil, fmt.Errorf("%w: content[%d].input: %v", ErrMalformed, i, err)
			}
			id, name, typ := b.ID, b.Name, "function"
			msg.ToolCalls = append(msg.ToolCalls, &pb.ToolCall{Id: &id, Type: &typ, Function: &pb.FunctionCall{Name: &name, Arguments: &args}})
		case BlockThinking, BlockRedactedThinking:
			reasoning.WriteString(b.Thinking)
			v, err := blockValue(b)
			if err != nil {
				return nil, fmt.Errorf("%w: content[%d]: %v", ErrMalformed, i, err)
			}
			thinking = append(thinking, v)
		}
	}
	if hasText || len(msg.ToolCalls) == 0 {
		msg.Content = structpb.NewStringValue(text.String())
	} else {
		msg.Content = structpb.NewNullValue()
	}
	if len(thinking) > 0 {
		msg.Extra = &structpb.Struct{Fields: map[string]*structpb.Value{
			ReasoningContent: structpb.NewStringValue(reasoning.String()),
			ThinkingBlocks:   structpb.NewListValue(&structpb.ListValue{Values: thinking}),
		}}
	}
	return msg, nil
}

// compactJSON is a tool's input as OpenAI's arguments string ({} when absent).
func compactJSON(raw json.RawMessage) (string, error) {
	if len(raw) == 0 {
		return "{}", nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return "", err
	}
	return buf.String(), nil
}

func blockValue(b ContentBlock) (*structpb.Value, error) {
	raw, err := json.Marshal(b)
	if err != nil {
		return nil, err
	}
	v := &structpb.Value{}
	if err := v.UnmarshalJSON(raw); err != nil {
		return nil, err
	}
	return v, nil
}

// completionUsage: Anthropic's input_tokens exclude the cached ones, OpenAI's
// prompt_tokens include them, so prompt_tokens is the sum of the three and
// prompt_tokens_details says how many were read from (cached_tokens) and
// written to (cache_creation_tokens, when reported) the cache.
func completionUsage(input, output int, cacheRead, cacheCreation *int) *pb.Usage {
	read, created := derefInt(cacheRead), derefInt(cacheCreation)
	prompt := clampInt32(input + read + created)
	completion := clampInt32(output)
	details := map[string]*structpb.Value{DetailCachedTokens: structpb.NewNumberValue(float64(read))}
	if cacheCreation != nil {
		details[DetailCacheCreationTokens] = structpb.NewNumberValue(float64(created))
	}
	return &pb.Usage{
		PromptTokens:        prompt,
		CompletionTokens:    completion,
		TotalTokens:         clampInt32(int(prompt) + int(completion)),
		PromptTokensDetails: &structpb.Struct{Fields: details},
	}
}

func derefInt(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// clampInt32 keeps hostile counts (negative, past int32) in range.
func clampInt32(n int) int32 {
	switch {
	case n < 0:
		return 0
	case n > 1<<31-1:
		return 1<<31 - 1
	}
	return int32(n)
}
