package anthropicjson

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
)

// ToChat translates a /v1/messages request for a target that speaks OpenAI's chat
// wire. Everything with a meaning on both sides is carried over:
//   - system → a system message (text blocks joined with "\n");
//   - text, image (base64 or URL) and document (base64 PDF, plain text) blocks →
//     content parts (a string content stays a string);
//   - tool_use blocks → the assistant's tool_calls; tool_result blocks → tool
//     messages, before the rest of their user turn (text-only content);
//   - thinking blocks → the assistant message's reasoning_content;
//   - max_tokens, temperature, top_p; top_k → top_k (a member many OpenAI-compatible
//     servers read); stop_sequences → stop; metadata.user_id → user;
//   - tools (client tools) → functions; tool_choice auto/any/tool/none → auto/
//     required/{function}/none, disable_parallel_tool_use → parallel_tool_calls false;
//   - thinking enabled → reasoning_effort, the inverse of FromChat's budgets (under
//     4096 low, under 16384 medium, else high), and max_tokens → max_completion_tokens
//     (the models that reason refuse max_tokens); disabled or adaptive → none.
//
// Dropped, because they have no meaning on the chat wire: cache_control (OpenAI
// caches prompts by itself), signatures and redacted_thinking blocks (only
// Anthropic can read them), tool_result's is_error, service_tier. Anything else
// (server tools, images inside tool results, unknown members and block types) is
// a *SurfaceError with Unsupported set: never silently dropped.
func ToChat(body []byte) (*pb.ChatCompletionRequest, error) {
	if _, err := ReadHead(body); err != nil {
		return nil, err
	}
	var r Request
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, surfaceDecodeError(body, err)
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range r.Extra {
			if !yield(k) {
				return
			}
		}
	}) {
		if name != "service_tier" {
			return nil, untranslatable(name, "this member has no equivalent on the chat completions wire")
		}
	}
	out := &pb.ChatCompletionRequest{Model: r.Model, Stream: r.Stream, Temperature: r.Temperature, TopP: r.TopP}
	maxTokens := int32(min(r.MaxTokens, math.MaxInt32)) // ReadHead bounded it
	out.MaxTokens = &maxTokens
	if r.TopK != nil {
		out.Extra = &structpb.Struct{Fields: map[string]*structpb.Value{"top_k": structpb.NewNumberValue(float64(*r.TopK))}}
	}
	if len(r.StopSequences) > 0 {
		stop := make([]*structpb.Value, len(r.StopSequences))
		for i, s := range r.StopSequences {
			stop[i] = structpb.NewStringValue(s)
		}
		out.Stop = structpb.NewListValue(&structpb.ListValue{Values: stop})
	}
	if r.Metadata != nil && r.Metadata.UserID != "" {
		out.User = &r.Metadata.UserID
	}
	if err := thinkingToChat(r.Thinking, out); err != nil {
		return nil, err
	}
	if r.System != nil {
		text, err := textOnly(r.System.AsBlocks(), "system")
		if err != nil {
			return nil, err
		}
		if text != "" || r.System.IsString {
			out.Messages = append(out.Messages, &pb.ChatMessage{Role: "system", Content: structpb.NewStringValue(text)})
		}
	}
	for i, m := range r.Messages {
		msgs, err := messageToChat(m, pathAt("messages", i))
		if err != nil {
			return nil, err
		}
		out.Messages = append(out.Messages, msgs...)
	}
	if err := toolsToChat(r.Tools, r.ToolChoice, out); err != nil {
		return nil, err
	}
	return out, nil
}

// surfaceDecodeError is the 400 for a body ReadHead accepted but the types cannot read.
func surfaceDecodeError(body []byte, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		// The decoders' own types ("plain", embedded to keep their methods off)
		// are no member of the request.
		field := strings.ReplaceAll(strings.TrimSuffix(te.Field, ".plain"), ".plain.", ".")
		fits, want := fitsKind(te.Type.Kind()), "Input should be a valid "+kindName(te.Type.Kind().String())
		if te.Type == reflect.TypeFor[Content]() {
			fits, want = fitsContent, "Input should be a valid string or list of content blocks"
		}
		return badField(indexedPath(body, field, fits), want)
	}
	return badField("", "the request body could not be read: "+err.Error())
}

// indexedPath finds in body the first value at field (encoding/json's dotted
// path, which has no list indices) that does not fit, and names it with its
// indices ("messages[1].content[0].text"); field as it is when none is found.
// Only an error's path is looked for, so the body is decoded once more, whole.
func indexedPath(body []byte, field string, fits func(any) bool) string {
	var root any
	if json.Unmarshal(body, &root) != nil {
		return field
	}
	names := strings.Split(field, ".")
	var walk func(v any, i int, at string) (string, bool)
	walk = func(v any, i int, at string) (string, bool) {
		if i == len(names) {
			return at, !fits(v)
		}
		switch x := v.(type) {
		case []any:
			for j, e := range x {
				if p, ok := walk(e, i, at+"["+strconv.Itoa(j)+"]"); ok {
					return p, true
				}
			}
		case map[string]any:
			if key, ok := member(x, names[i]); ok {
				return walk(x[key], i+1, strings.TrimPrefix(at+"."+key, "."))
			}
		}
		return "", false
	}
	if p, ok := walk(root, 0, ""); ok {
		return p
	}
	return field
}

// member is the key of m that encoding/json reads as name: name itself, else
// one equal to it but for case (the body's own spelling names it).
func member(m map[string]any, name string) (string, bool) {
	if _, ok := m[name]; ok {
		return name, true
	}
	for k := range m {
		if strings.EqualFold(k, name) {
			return k, true
		}
	}
	return "", false
}

// fitsKind is whether a JSON value decodes into a Go value of kind k (null
// decodes into anything).
func fitsKind(k reflect.Kind) func(any) bool {
	return func(v any) bool {
		switch v.(type) {
		case nil:
			return true
		case string:
			return k == reflect.String
		case bool:
			return k == reflect.Bool
		case float64:
			return k >= reflect.Int && k <= reflect.Float64
		case []any:
			return k == reflect.Slice || k == reflect.Array
		case map[string]any:
			return k == reflect.Struct || k == reflect.Map || k == reflect.Pointer
		}
		return false
	}
}

// fitsContent is whether a JSON value is a content: a string, a list of
// blocks, or null.
func fitsContent(v any) bool {
	switch v.(type) {
	case nil, string, []any:
		return true
	}
	return false
}

func kindName(goKind string) string {
	switch {
	case goKind == "string":
		return "string"
	case goKind == "bool":
		return "boolean"
	case goKind == "slice":
		return "list"
	case goKind == "struct", goKind == "map", goKind == "ptr":
		return "object"
	case strings.HasPrefix(goKind, "int"), strings.HasPrefix(goKind, "float"):
		return "number"
	}
	return "value"
}

func thinkingToChat(t *Thinking, out *pb.ChatCompletionRequest) error {
	if t == nil {
		return nil
	}
	var effort string
	switch t.Type {
	case "disabled", "adaptive":
		return nil
	case "enabled":
		switch {
		case t.BudgetTokens < effortBudget["medium"]:
			effort = "low"
		case t.BudgetTokens < effortBudget["high"]:
			effort = "medium"
		default:
			effort = "high"
		}
	default:
		return untranslatable("thinking.type", "thinking type "+jsonQuote(t.Type)+" has no equivalent on the chat completions wire")
	}
	out.ReasoningEffort = &effort
	// The models that reason refuse max_tokens ("use max_completion_tokens
	// instead"), and max_completion_tokens bounds the reasoning and the answer
	// together, as Anthropic's max_tokens does.
	out.MaxCompletionTokens, out.MaxTokens = out.MaxTokens, nil
	return nil
}

func jsonQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// textOnly joins the texts of blocks that must all be text blocks.
func textOnly(blocks []ContentBlock, param string) (string, error) {
	var texts []string
	for i, b := range blocks {
		if b.Type != BlockText {
			return "", untranslatable(pathAt(param, i)+".type", "only text blocks can be translated here, not "+jsonQuote(b.Type))
		}
		texts = append(texts, b.Text)
	}
	return strings.Join(texts, "\n"), nil
}

// messageToChat translates one turn; a user turn with tool results becomes the
// tool messages (first, as chat wants them right after the assistant's calls) and
// then a user message with the rest, if any.
func messageToChat(m Message, param string) ([]*pb.ChatMessage, error) {
	switch m.Role {
	case "user":
		return userToChat(m.Content, param)
	case "assistant":
		msg, err := assistantToChat(m.Content, param)
		return []*pb.ChatMessage{msg}, err
	}
	return nil, badField(param+".role", "Input should be 'user' or 'assistant'")
}

func userToChat(c Content, param string) ([]*pb.ChatMessage, error) {
	if c.IsString {
		return []*pb.ChatMessage{{Role: "user", Content: structpb.NewStringValue(c.Text)}}, nil
	}
	var out []*pb.ChatMessage
	var parts []*structpb.Value
	for i, b := range c.Blocks {
		p := pathAt(param+".content", i)
		if b.Type == BlockToolResult {
			msg, err := toolResultToChat(b, p)
			if err != nil {
				return nil, err
			}
			out = append(out, msg)
			continue
		}
		part, err := partToChat(b, p)
		if err != nil {
			return nil, err
		}
		parts = append(parts, part)
	}
	if len(parts) > 0 || len(out) == 0 {
		out = append(out, &pb.ChatMessage{Role: "user", Content: structpb.NewListValue(&structpb.ListValue{Values: parts})})
	}
	return out, nil
}

func toolResultToChat(b ContentBlock, param string) (*pb.ChatMessage, error) {
	text := ""
	if b.Content != nil {
		var err error
		if text, err = textOnly(b.Content.AsBlocks(), param+".content"); err != nil {
			return nil, err
		}
	}
	id := b.ToolUseID
	return &pb.ChatMessage{Role: "tool", ToolCallId: &id, Content: structpb.NewStringValue(text)}, nil
}

// partToChat translates a user content block into a chat content part.
func partToChat(b ContentBlock, param string) (*structpb.Value, error) {
	obj := func(fields map[string]*structpb.Value) *structpb.Value {
		return structpb.NewStructValue(&structpb.Struct{Fields: fields})
	}
	str := structpb.NewStringValue
	switch b.Type {
	case BlockText:
		return obj(map[string]*structpb.Value{"type": str("text"), "text": str(b.Text)}), nil
	case BlockImage:
		url, err := sourceURL(b.Source, param+".source")
		if err != nil {
			return nil, err
		}
		return obj(map[string]*structpb.Value{"type": str("image_url"),
			"image_url": obj(map[string]*structpb.Value{"url": str(url)})}), nil
	case BlockDocument:
		s := b.Source
		switch {
		case s != nil && s.Type == "text":
			return obj(map[string]*structpb.Value{"type": str("text"), "text": str(s.Data)}), nil
		case s != nil && s.Type == "base64" && s.MediaType == "application/pdf":
			file := map[string]*structpb.Value{"file_data": str("data:application/pdf;base64," + s.Data)}
			if title, ok := b.Extra["title"]; ok {
				var t string
				if json.Unmarshal(title, &t) == nil && t != "" {
					file["filename"] = str(t)
				}
			}
			return obj(map[string]*structpb.Value{"type": str("file"), "file": obj(file)}), nil
		}
		return nil, untranslatable(param+".source", "only base64 PDF and plain-text documents can be translated to chat content parts")
	}
	return nil, untranslatable(param+".type", "a user block of type "+jsonQuote(b.Type)+" has no equivalent on the chat completions wire")
}

func sourceURL(s *ImageSource, param string) (string, error) {
	switch {
	case s == nil:
		return "", badField(param, "Field required")
	case s.Type == "base64":
		return "data:" + s.MediaType + ";base64," + s.Data, nil
	case s.Type == "url":
		return s.URL, nil
	}
	return "", untranslatable(param+".type", "an image source of type "+jsonQuote(s.Type)+" has no equivalent on the chat completions wire")
}

func assistantToChat(c Content, param string) (*pb.ChatMessage, error) {
	msg := &pb.ChatMessage{Role: "assistant"}
	if c.IsString {
		msg.Content = structpb.NewStringValue(c.Text)
		return msg, nil
	}
	var text, reasoning strings.Builder
	hasText := false
	for i, b := range c.Blocks {
		p := pathAt(param+".content", i)
		switch b.Type {
		case BlockText:
			text.WriteString(b.Text)
			hasText = true
		case BlockThinking:
			reasoning.WriteString(b.Thinking)
		case BlockRedactedThinking:
			// Only Anthropic can read it.
		case BlockToolUse:
			args := string(b.Input)
			if args == "" {
				args = "{}"
			}
			id, typ, name := b.ID, "function", b.Name
			msg.ToolCalls = append(msg.ToolCalls, &pb.ToolCall{Id: &id, Type: &typ,
				Function: &pb.FunctionCall{Name: &name, Arguments: &args}})
		default:
			return nil, untranslatable(p+".type", "an assistant block of type "+jsonQuote(b.Type)+" has no equivalent on the chat completions wire")
		}
	}
	if hasText || len(msg.ToolCalls) == 0 {
		msg.Content = structpb.NewStringValue(text.String())
	}
	if reasoning.Len() > 0 {
		msg.Extra = &structpb.Struct{Fields: map[string]*structpb.Value{"reasoning_content": structpb.NewStringValue(reasoning.String())}}
	}
	return msg, nil
}

func toolsToChat(tools []Tool, choice *ToolChoice, out *pb.ChatCompletionRequest) error {
	for i, t := range tools {
		p := pathAt("tools", i)
		if t.Type != "" && t.Type != "custom" {
			return untranslatable(p+".type", "server tool "+jsonQuote(t.Type)+" runs only on Anthropic")
		}
		fn := &pb.FunctionDefinition{Name: t.Name}
		if t.Description != "" {
			fn.Description = &t.Description
		}
		if len(t.InputSchema) > 0 {
			var schema map[string]any
			if err := json.Unmarshal(t.InputSchema, &schema); err != nil {
				return badField(p+".input_schema", "Input should be a valid object")
			}
			s, err := structpb.NewStruct(schema)
			if err != nil {
				return badField(p+".input_schema", err.Error())
			}
			fn.Parameters = s
		}
		out.Tools = append(out.Tools, &pb.Tool{Type: "function", Function: fn})
	}
	if choice == nil {
		return nil
	}
	switch choice.Type {
	case "auto":
		out.ToolChoice = structpb.NewStringValue("auto")
	case "any":
		out.ToolChoice = structpb.NewStringValue("required")
	case "none":
		out.ToolChoice = structpb.NewStringValue("none")
	case "tool":
		out.ToolChoice = structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
			"type":     structpb.NewStringValue("function"),
			"function": structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"name": structpb.NewStringValue(choice.Name)}}),
		}})
	default:
		return badField("tool_choice.type", "Input should be 'auto', 'any', 'tool' or 'none'")
	}
	if choice.DisableParallelToolUse != nil && *choice.DisableParallelToolUse && choice.Type != "none" {
		no := false
		out.ParallelToolCalls = &no
	}
	return nil
}
