package openaijson

import (
	"strconv"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
)

// ChunkInfo is what a relay needs to know about a stream chunk without decoding it.
type ChunkInfo struct {
	// Error is set when the chunk's top level has an "error" member.
	Error bool
	// Finished is set when a choice carries a non-empty finish_reason.
	Finished bool
	// Choices is how many choices the chunk has; NonZeroIndex is set when one of
	// them has an index other than 0. A relay that tracks which choices finished
	// needs the indexes of any chunk but one with a lone choice 0.
	Choices      int
	NonZeroIndex bool
	// Usage is set when the chunk carries a usage object; UsageOnly when it also has
	// no choices (OpenAI's final usage chunk).
	Usage, UsageOnly bool
	// PromptTokens, CompletionTokens and TotalTokens come from usage;
	// CachedTokens and ReasoningTokens from its details, as DetailTokens reads
	// them.
	PromptTokens, CompletionTokens, TotalTokens int
	CachedTokens, ReasoningTokens               int
	// Complete is set when the chunk has every member OpenAI always sends (id,
	// object, created, model, choices[].index), so that it can be relayed as is.
	Complete bool
}

// InspectChunk reads a chat.completion.chunk's bytes and reports what a relay
// needs, without allocating a message. It accepts exactly what UnmarshalChunk
// accepts (the same syntax, depth and type checks) and fails with the error
// UnmarshalChunk gives, so a chunk has one verdict whichever way it is read.
func InspectChunk(data []byte) (ChunkInfo, error) {
	info, err := inspect(data)
	if err != nil {
		return ChunkInfo{}, failure(data, chunkError(data, err))
	}
	return info, nil
}

// chunkError is the member's error UnmarshalChunk reports for data, which the
// checker found wrong (only decoding names the member).
func chunkError(data []byte, err error) error {
	if err != errType && err != errRange {
		return err
	}
	return Unmarshal(data, &pb.ChatCompletionChunk{})
}

// inspect walks a chunk as UnmarshalChunk decodes it: every member of
// ChatCompletionChunk, ChunkChoice, ChatDelta, ToolCall, FunctionCall and Usage
// by name (TestInspectChunkChecksEveryField holds the names to the protos), any
// other kept as a Value.
func inspect(data []byte) (ChunkInfo, error) {
	var info ChunkInfo
	s := scanner{data: data}
	if s.peek() != '{' {
		return info, errSyntax
	}
	var id, object, created, model, choices bool
	indexes, nChoices := true, 0
	err := s.object(func(key []byte) error {
		switch string(key) { // a member given twice counts the last time, as in decoding
		case "id":
			id = s.peek() == '"'
			return s.checkStr()
		case "object":
			object = s.peek() == '"'
			return s.checkStr()
		case "created":
			created = s.peek() != 'n'
			_, err := s.checkInt(protoreflect.Int64Kind)
			return err
		case "model":
			model = s.peek() == '"'
			return s.checkStr()
		case "system_fingerprint", "service_tier":
			return s.checkStr()
		case "usage":
			// decoding keeps the last usage member: nothing of an earlier one counts
			info.Usage, info.PromptTokens, info.CompletionTokens = s.peek() == '{', 0, 0
			info.TotalTokens, info.CachedTokens, info.ReasoningTokens = 0, 0, 0
			return s.checkObject(func(k []byte) error { return s.inspectUsage(k, &info) })
		case "choices":
			choices, nChoices, indexes, info.Finished, info.NonZeroIndex = s.peek() == '[', 0, true, false, false
			return s.checkList(func() error {
				nChoices++
				hasIndex, index, finished, err := s.inspectChoice()
				indexes = indexes && hasIndex
				info.Finished = info.Finished || finished
				info.NonZeroIndex = info.NonZeroIndex || index != 0
				return err
			})
		case "error":
			info.Error = s.peek() != 'n'
		}
		return s.checkValue()
	})
	if err == nil && !s.atEnd() {
		err = errSyntax
	}
	info.UsageOnly = info.Usage && nChoices == 0
	info.Choices = nChoices
	info.Complete = id && object && created && model && choices && indexes
	return info, err
}

// inspectUsage checks a member of usage, keeping the token counts.
func (s *scanner) inspectUsage(k []byte, info *ChunkInfo) error {
	var n int64
	var err error
	switch string(k) {
	case "prompt_tokens":
		n, err = s.checkInt(protoreflect.Int32Kind)
		info.PromptTokens = int(n)
	case "completion_tokens":
		n, err = s.checkInt(protoreflect.Int32Kind)
		info.CompletionTokens = int(n)
	case "total_tokens":
		n, err = s.checkInt(protoreflect.Int32Kind)
		info.TotalTokens = int(n)
	case "prompt_tokens_details":
		info.CachedTokens, err = s.detailTokens("cached_tokens")
	case "completion_tokens_details":
		info.ReasoningTokens, err = s.detailTokens("reasoning_tokens")
	default:
		err = s.checkValue()
	}
	return err
}

// detailTokens checks a usage details object (a Struct) and reads its member
// name as DetailTokens reads it once decoded (the last member of that name
// counts, as decoding keeps the last). The details are read again after the
// check: a few members, once a stream.
func (s *scanner) detailTokens(name string) (int, error) {
	s.ws()
	start := s.pos
	if err := s.checkStruct(); err != nil {
		return 0, err
	}
	d := scanner{data: s.data[start:s.pos]}
	if d.peek() != '{' {
		return 0, nil // null
	}
	var f float64
	_ = d.object(func(k []byte) error {
		if string(k) != name {
			return d.walk(false)
		}
		f = 0
		if c := d.peek(); c != '-' && (c < '0' || c > '9') {
			return d.walk(false)
		}
		num, err := d.number()
		if err == nil {
			f, _ = strconv.ParseFloat(string(num), 64)
		}
		return err
	})
	return tokenCount(f), nil
}

// DetailTokens is the count under name in a usage details object
// (prompt_tokens_details.cached_tokens, completion_tokens_details.reasoning_tokens):
// a number's integer part, 0 for anything else or a number no int holds.
func DetailTokens(details *structpb.Struct, name string) int {
	return tokenCount(details.GetFields()[name].GetNumberValue())
}

func tokenCount(f float64) int {
	if f != f || f >= 1<<63 || f < -1<<63 {
		return 0
	}
	return int(f)
}

// inspectChoice checks a choice, noting whether it has its index, the index (0
// when absent or null, as decoded), and whether its finish_reason ends the stream.
func (s *scanner) inspectChoice() (hasIndex bool, index int64, finished bool, err error) {
	err = s.object(func(k []byte) error {
		switch string(k) {
		case "index":
			hasIndex = s.peek() != 'n'
			var err error
			index, err = s.checkInt(protoreflect.Int32Kind)
			return err
		case "delta":
			return s.checkObject(s.checkDelta)
		case "finish_reason":
			start := s.pos
			if s.peek() != '"' {
				finished = false
				return s.checkStr()
			}
			err := s.skipStr()
			finished = s.pos-start > len(`""`) // only "" decodes to ""
			return err
		case "logprobs":
			return s.checkStruct()
		}
		return s.checkValue()
	})
	return hasIndex, index, finished, err
}

func (s *scanner) checkDelta(k []byte) error {
	switch string(k) {
	case "role", "content", "refusal":
		return s.checkStr()
	case "tool_calls":
		return s.checkList(func() error { return s.object(s.checkToolCall) })
	}
	return s.checkValue()
}

func (s *scanner) checkToolCall(k []byte) error {
	switch string(k) {
	case "index":
		_, err := s.checkInt(protoreflect.Int32Kind)
		return err
	case "id", "type":
		return s.checkStr()
	case "function":
		return s.checkObject(s.checkFunction)
	}
	return s.checkValue()
}

func (s *scanner) checkFunction(k []byte) error {
	switch string(k) {
	case "name", "arguments":
		return s.checkStr()
	}
	return s.checkValue()
}
