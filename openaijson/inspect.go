package openaijson

import (
	"bytes"
	"slices"
	"strconv"
	"unicode/utf8"

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
	// Content is set when a choice starts the answer: text, reasoning
	// (reasoning_content or reasoning), a refusal, a tool call or a finish
	// (providers.HasContent of the decoded chunk).
	Content bool
	// Complete is set when the chunk has every member OpenAI always sends (id,
	// object, created, model, choices[].index) and its strings decode to
	// themselves (faithful), so that it can be relayed as is.
	Complete bool
}

// InspectChunk reads a chat.completion.chunk's bytes and reports what a relay
// needs, without allocating a message. It accepts exactly what UnmarshalChunk
// accepts (the same syntax, depth and type checks) and fails with the error
// UnmarshalChunk gives, so a chunk has one verdict whichever way it is read.
func InspectChunk(data []byte) (ChunkInfo, error) {
	info, _, err := inspect(data, false)
	if err != nil {
		return ChunkInfo{}, failure(data, chunkError(data, err))
	}
	return info, nil
}

// CompletionInfo is what a relay needs to know about a non-stream
// chat.completion to send it on as the upstream sent it.
type CompletionInfo struct {
	// Error is set when the top level has an "error" member.
	Error bool
	// Choices is how many choices it has.
	Choices int
	// Usage is set when it carries a usage object; the counts as ChunkInfo's.
	Usage                                       bool
	PromptTokens, CompletionTokens, TotalTokens int
	CachedTokens, ReasoningTokens               int
	// ID and Model are its id and model ("" when absent or null).
	ID, Model string
	// Complete is set when it has every member a decoded completion would
	// otherwise get filled in or written with its zero value (an id, a non-empty
	// object and model, a non-zero created, a usage object, and in each choice
	// an index, a message with a non-empty role and a non-empty finish_reason:
	// a choice without one is checked for an answer once decoded) and its strings decode to
	// themselves (faithful), so that its bytes say what the decoded and
	// completed message would.
	Complete bool
}

// InspectCompletion reads a chat.completion's bytes and reports what a relay
// needs, without allocating a message. It walks the members UnmarshalCompletion
// decodes with the checks InspectChunk uses; an error means only that the
// bytes are not to be relayed as they are (UnmarshalCompletion then gives the
// verdict and its error): bytes it accepts, UnmarshalCompletion accepts too
// (FuzzInspectCompletion).
func InspectCompletion(data []byte) (CompletionInfo, error) {
	info, at, err := inspect(data, true)
	if err != nil {
		return CompletionInfo{}, err
	}
	return CompletionInfo{ID: at.id.in(data), Model: at.model.in(data), Error: info.Error, Choices: info.Choices, Usage: info.Usage,
		PromptTokens: info.PromptTokens, CompletionTokens: info.CompletionTokens, TotalTokens: info.TotalTokens,
		CachedTokens: info.CachedTokens, ReasoningTokens: info.ReasoningTokens, Complete: info.Complete}, nil
}

// chunkError is the member's error UnmarshalChunk reports for data, which the
// checker found wrong (only decoding names the member).
func chunkError(data []byte, err error) error {
	if err != errType && err != errRange {
		return err
	}
	return Unmarshal(data, &pb.ChatCompletionChunk{})
}

// inspect walks a chunk as UnmarshalChunk decodes it (or, with completion, a
// chat.completion as UnmarshalCompletion does): every member of
// ChatCompletionChunk, ChunkChoice, ChatDelta, ToolCall, FunctionCall and Usage
// (ChatCompletion, Choice, ChatMessage) by name (TestInspectorsCheckEveryField
// holds the names to the protos), any other kept as a Value. Complete follows the kind's own rule (see the Infos).
func inspect(data []byte, completion bool) (ChunkInfo, texts, error) {
	var info ChunkInfo
	var at texts
	s := scanner{data: data}
	if s.peek() != '{' {
		return info, at, errSyntax
	}
	var id, object, created, model, choices bool
	indexes, nChoices := true, 0
	filled := true // completion: every choice has a message with a role
	err := s.object(func(key []byte) error {
		switch string(key) { // a member given twice counts the last time, as in decoding
		case "id":
			err := at.id.check(&s)
			id = at.id.set(s.data, false)
			return err
		case "object":
			var err error
			object, err = s.checkStrSet(completion)
			return err
		case "created":
			isNull := s.peek() == 'n'
			n, err := s.checkInt(protoreflect.Int64Kind)
			created = !isNull && (!completion || n != 0)
			return err
		case "model":
			err := at.model.check(&s)
			model = at.model.set(s.data, completion)
			return err
		case "system_fingerprint", "service_tier":
			return s.checkStr()
		case "usage":
			// decoding keeps the last usage member: nothing of an earlier one counts
			info.Usage, info.PromptTokens, info.CompletionTokens = s.peek() == '{', 0, 0
			info.TotalTokens, info.CachedTokens, info.ReasoningTokens = 0, 0, 0
			return s.checkObject(func(k []byte) error { return s.inspectUsage(k, &info) })
		case "choices":
			choices, nChoices, indexes, info.Finished, info.NonZeroIndex = s.peek() == '[', 0, true, false, false
			filled, info.Content = true, false
			return s.checkList(func() error {
				nChoices++
				if completion {
					role, finished, hasIndex, err := s.inspectCompletionChoice()
					filled, indexes = filled && role && finished, indexes && hasIndex
					return err
				}
				hasIndex, index, finished, content, err := s.inspectChoice()
				indexes = indexes && hasIndex
				info.Finished = info.Finished || finished
				info.Content = info.Content || content || finished
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
	info.Complete = id && object && created && model && choices && indexes && (!completion || filled && info.Usage)
	info.Complete = info.Complete && err == nil && faithful(data) // its bytes say what decoding would
	return info, at, err
}

// texts are where the members inspect reads as text are in the data.
type texts struct{ id, model span }

// span is a member's JSON value, data[from:to] (a string or null).
type span struct{ from, to int }

// check checks a string field, noting where it is.
func (sp *span) check(s *scanner) error {
	s.ws()
	sp.from = s.pos
	err := s.checkStr()
	sp.to = s.pos
	return err
}

// set reports whether the span is a string, and with nonEmpty not "" either
// (only "" decodes to "").
func (sp span) set(data []byte, nonEmpty bool) bool {
	return sp.to > sp.from && data[sp.from] == '"' && (!nonEmpty || sp.to-sp.from > len(`""`))
}

// in is the span's string in data, "" for null (data was checked).
func (sp span) in(data []byte) string {
	d := scanner{data: data[sp.from:sp.to]}
	if d.peek() != '"' {
		return ""
	}
	v, _ := d.str()
	return v
}

// faithful reports whether the strings of data (JSON the inspection accepted)
// decode to exactly their own text: valid UTF-8, and no lone surrogate escape,
// which decoding turns into U+FFFD. (A key given twice is left as it came:
// decoding keeps the last, as JSON readers do.) Every backslash in valid JSON
// starts an escape, so the escapes are found without reading the strings.
func faithful(data []byte) bool {
	if !utf8.Valid(data) {
		return false
	}
	for i := bytes.IndexByte(data, '\\'); i >= 0; {
		n, mend, ok := escapeAt(data, i)
		if !ok || mend {
			return false
		}
		j := bytes.IndexByte(data[i+n:], '\\')
		if j < 0 {
			break
		}
		i += n + j
	}
	return true
}

// checkStrSet checks a string field and says whether it is set: a string, and
// with nonEmpty not "" either.
func (s *scanner) checkStrSet(nonEmpty bool) (bool, error) {
	var sp span
	err := sp.check(s)
	return err == nil && sp.set(s.data, nonEmpty), err
}

// inspectCompletionChoice checks a chat.completion's choice, noting whether it
// has a message with a non-empty role, a non-empty finish_reason, and its index.
func (s *scanner) inspectCompletionChoice() (role, finished, hasIndex bool, err error) {
	err = s.object(func(k []byte) error {
		switch string(k) {
		case "index":
			hasIndex = s.peek() != 'n'
			_, err := s.checkInt(protoreflect.Int32Kind)
			return err
		case "message":
			role = false
			return s.checkObject(func(k []byte) error {
				if string(k) == "role" {
					var err error
					role, err = s.checkStrSet(true)
					return err
				}
				return s.checkMessage(k)
			})
		case "finish_reason":
			var err error
			finished, err = s.checkStrSet(true)
			return err
		case "logprobs":
			return s.checkStruct()
		}
		return s.checkValue()
	})
	return role, finished, hasIndex, err
}

// checkMessage checks a member of a ChatMessage other than role.
func (s *scanner) checkMessage(k []byte) error {
	switch string(k) {
	case "name", "tool_call_id", "refusal":
		return s.checkStr()
	case "tool_calls":
		return s.checkList(func() error { return s.object(s.checkToolCall) })
	}
	return s.checkValue() // content (a Value) and unknown members
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
func (s *scanner) inspectChoice() (hasIndex bool, index int64, finished, content bool, err error) {
	err = s.object(func(k []byte) error {
		switch string(k) {
		case "index":
			hasIndex = s.peek() != 'n'
			var err error
			index, err = s.checkInt(protoreflect.Int32Kind)
			return err
		case "delta":
			var d deltaContent // the last delta member counts, as in decoding
			err := s.checkObject(func(k []byte) error { return s.inspectDelta(k, &d) })
			content = d.any()
			return err
		case "finish_reason":
			var err error
			finished, err = s.checkStrSet(true)
			return err
		case "logprobs":
			return s.checkStruct()
		}
		return s.checkValue()
	})
	return hasIndex, index, finished, content, err
}

// ReasoningKeys are the delta members upstreams stream reasoning in (kept as
// unknown members): a string in one of them starts the answer.
var ReasoningKeys = [...]string{"reasoning_content", "reasoning"}

// deltaContent is what of a delta starts the answer (providers.HasContent),
// by member: each counts the last time it is given.
type deltaContent struct {
	text, refusal, toolCalls bool
	reasoning                [len(ReasoningKeys)]bool
}

func (d deltaContent) any() bool {
	return d.text || d.refusal || d.toolCalls || slices.Contains(d.reasoning[:], true)
}

func (s *scanner) inspectDelta(k []byte, d *deltaContent) error {
	var err error
	switch string(k) {
	case "role":
		return s.checkStr()
	case "content":
		d.text, err = s.checkStrSet(true)
	case "refusal":
		d.refusal, err = s.checkStrSet(true)
	case "tool_calls":
		n := 0
		err = s.checkList(func() error { n++; return s.object(s.checkToolCall) })
		d.toolCalls = n > 0
	default:
		i := slices.Index(ReasoningKeys[:], string(k))
		if i < 0 || s.peek() != '"' {
			if i >= 0 {
				d.reasoning[i] = false // not a string: no reasoning
			}
			return s.checkValue()
		}
		d.reasoning[i], err = s.checkStrSet(true)
	}
	return err
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
