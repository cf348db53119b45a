package anthropicjson

import (
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
)

// Chat message extra members: the assistant's reasoning as OpenAI-compatible
// servers return it (ToCompletion writes both), and the members an answer
// carries that mean nothing as input (ignored, as OpenAI ignores them).
const (
	// ReasoningContent is the thinking text, on a message or a stream delta.
	ReasoningContent = "reasoning_content"
	// ThinkingBlocks is the list of thinking and redacted_thinking blocks, signed,
	// exactly as Anthropic sent them: what a later turn must send back.
	ThinkingBlocks = "thinking_blocks"
)

var ignoredMessageExtra = map[string]bool{"annotations": true, "reasoning": true, ReasoningContent: true}

// chatMessages turns the conversation into Anthropic's system prompt and
// alternating turns. System and developer messages, wherever they are, become
// the system prompt in order; consecutive turns of one role (tool results are
// user turns) are merged into one, as Anthropic requires alternation.
func chatMessages(msgs []*pb.ChatMessage) (*Content, []Message, error) {
	var system []ContentBlock
	var turns []Message
	for i, m := range msgs {
		p := fmt.Sprintf("messages[%d]", i)
		var role string
		var blocks []ContentBlock
		var err error
		switch m.GetRole() {
		case "system", "developer":
			if err := noName(m, p); err != nil {
				return nil, nil, err
			}
			if err := noExtra(m, p); err != nil {
				return nil, nil, err
			}
			b, err := parts(m.GetContent(), p+".content", textParts)
			if err != nil {
				return nil, nil, err
			}
			system = append(system, b...)
			continue
		case "user":
			role = "user"
			if err = noName(m, p); err == nil {
				if err = noExtra(m, p); err == nil {
					blocks, err = parts(m.GetContent(), p+".content", userParts)
				}
			}
		case "assistant":
			role = "assistant"
			if err = noName(m, p); err == nil {
				blocks, err = assistantBlocks(m, p)
			}
		case "tool":
			role = "user"
			if err = noExtra(m, p); err == nil {
				blocks, err = toolResult(m, p)
			}
		default:
			err = unsupported(p+".role", "unknown role %q", m.GetRole())
		}
		if err != nil {
			return nil, nil, err
		}
		if n := len(turns); n > 0 && turns[n-1].Role == role {
			turns[n-1].Content.Blocks = append(turns[n-1].Content.Blocks, blocks...)
			continue
		}
		turns = append(turns, Message{Role: role, Content: BlocksContent(blocks...)})
	}
	for i := range turns { // a lone string stays a string, as the client wrote it
		turns[i].Content.Blocks = dropEmptyText(turns[i].Content.Blocks)
		if b := turns[i].Content.Blocks; len(b) == 1 && isPlainText(b[0]) {
			turns[i].Content = TextContent(b[0].Text)
		}
	}
	if len(system) == 0 {
		return nil, turns, nil
	}
	if len(system) == 1 && isPlainText(system[0]) {
		c := TextContent(system[0].Text)
		return &c, turns, nil
	}
	c := BlocksContent(system...)
	return &c, turns, nil
}

// dropEmptyText drops empty text blocks beside other blocks (an assistant's
// content "" beside its tool calls): Anthropic refuses empty text blocks, and
// they say nothing.
func dropEmptyText(blocks []ContentBlock) []ContentBlock {
	if len(blocks) < 2 {
		return blocks
	}
	out := blocks[:0]
	for _, b := range blocks {
		if !isPlainText(b) || b.Text != "" {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		return blocks[:1]
	}
	return out
}

func isPlainText(b ContentBlock) bool {
	return b.Type == BlockText && b.CacheControl == nil && b.Citations == nil && len(b.Extra) == 0
}

// noName refuses a participant name: Anthropic's turns have none.
func noName(m *pb.ChatMessage, p string) error {
	if m.Name != nil && *m.Name != "" {
		return unsupported(p+".name", "Anthropic's messages have no participant names")
	}
	return nil
}

func noExtra(m *pb.ChatMessage, p string) error {
	for name := range m.GetExtra().GetFields() {
		if !ignoredMessageExtra[name] {
			return unsupported(p+"."+name, "no Anthropic equivalent")
		}
	}
	return nil
}

// Which content part types a role's content may have.
const (
	textParts = iota
	userParts
	assistantParts
)

// parts turns a message's content (a string, an array of parts, or null) into blocks.
func parts(content *structpb.Value, p string, allowed int) ([]ContentBlock, error) {
	switch k := content.GetKind().(type) {
	case nil, *structpb.Value_NullValue:
		return nil, nil
	case *structpb.Value_StringValue:
		return []ContentBlock{{Type: BlockText, Text: k.StringValue}}, nil
	case *structpb.Value_ListValue:
		var out []ContentBlock
		for j, v := range k.ListValue.GetValues() {
			b, err := part(v.GetStructValue(), fmt.Sprintf("%s[%d]", p, j), allowed)
			if err != nil {
				return nil, err
			}
			out = append(out, b)
		}
		return out, nil
	}
	return nil, unsupported(p, "neither a string nor an array of parts")
}

func part(s *structpb.Struct, p string, allowed int) (ContentBlock, error) {
	f := s.GetFields()
	if s == nil {
		return ContentBlock{}, unsupported(p, "a content part must be an object")
	}
	typ := f["type"].GetStringValue()
	var b ContentBlock
	known := map[string]bool{"type": true, "cache_control": true}
	switch {
	case typ == "text" || (typ == "refusal" && allowed == assistantParts):
		key := "text"
		if typ == "refusal" {
			key = "refusal"
		}
		known[key] = true
		b = ContentBlock{Type: BlockText, Text: f[key].GetStringValue()}
	case typ == "image_url" && allowed == userParts:
		known["image_url"] = true
		img := f["image_url"].GetStructValue().GetFields()
		for name := range img {
			if name != "url" && name != "detail" { // detail: Anthropic sizes images itself
				return b, unsupported(p+".image_url."+name, "no Anthropic equivalent")
			}
		}
		src, err := imageSource(img["url"].GetStringValue(), p+".image_url.url")
		if err != nil {
			return b, err
		}
		b = ContentBlock{Type: BlockImage, Source: src}
	case typ == "file" && allowed == userParts:
		known["file"] = true
		src, err := fileSource(f["file"].GetStructValue(), p+".file")
		if err != nil {
			return b, err
		}
		b = ContentBlock{Type: BlockDocument, Source: src}
	default:
		return b, unsupported(p+".type", "content part type %q does not translate here", typ)
	}
	for name := range f {
		if !known[name] {
			return b, unsupported(p+"."+name, "no Anthropic equivalent")
		}
	}
	if cc, ok := f["cache_control"]; ok {
		raw, err := cc.MarshalJSON()
		if err != nil {
			return b, unsupported(p+".cache_control", "%v", err)
		}
		b.CacheControl = raw
	}
	return b, nil
}

// imageSource: a base64 data: URL is a base64 source, an http(s) URL a url source.
func imageSource(url, p string) (*ImageSource, error) {
	if strings.HasPrefix(url, "http://") || strings.HasPrefix(url, "https://") {
		return &ImageSource{Type: "url", URL: url}, nil
	}
	if mediaType, data, ok := dataURL(url); ok {
		return &ImageSource{Type: "base64", MediaType: mediaType, Data: data}, nil
	}
	return nil, unsupported(p, "only http(s) URLs and base64 data: URLs translate")
}

// dataURL splits "data:MEDIA;base64,DATA".
func dataURL(url string) (mediaType, data string, ok bool) {
	rest, ok := strings.CutPrefix(url, "data:")
	if !ok {
		return "", "", false
	}
	head, data, ok := strings.Cut(rest, ",")
	mediaType, isBase64 := strings.CutSuffix(head, ";base64")
	if !ok || !isBase64 || mediaType == "" {
		return "", "", false
	}
	return mediaType, data, true
}

// fileSource: a PDF as file_data (a base64 data: URL) is a document's base64
// source; OpenAI file ids mean nothing to Anthropic.
func fileSource(file *structpb.Struct, p string) (*ImageSource, error) {
	f := file.GetFields()
	if _, ok := f["file_id"]; ok {
		return nil, unsupported(p+".file_id", "OpenAI file ids mean nothing to Anthropic")
	}
	mediaType, data, ok := dataURL(f["file_data"].GetStringValue())
	if !ok || mediaType != "application/pdf" {
		return nil, unsupported(p+".file_data", "only a PDF as a base64 data: URL translates")
	}
	return &ImageSource{Type: "base64", MediaType: mediaType, Data: data}, nil
}

// assistantBlocks: thinking blocks (thinking_blocks as ToCompletion wrote them),
// then the text (content, or the refusal), then the tool calls as tool_use blocks.
func assistantBlocks(m *pb.ChatMessage, p string) ([]ContentBlock, error) {
	var out []ContentBlock
	for name, v := range m.GetExtra().GetFields() {
		if name != ThinkingBlocks {
			if !ignoredMessageExtra[name] {
				return nil, unsupported(p+"."+name, "no Anthropic equivalent")
			}
			continue
		}
		blocks, err := thinkingBlocks(v, p+"."+name)
		if err != nil {
			return nil, err
		}
		out = append(out, blocks...)
	}
	text, err := parts(m.GetContent(), p+".content", assistantParts)
	if err != nil {
		return nil, err
	}
	out = append(out, text...)
	if len(text) == 0 && m.GetRefusal() != "" {
		out = append(out, ContentBlock{Type: BlockText, Text: m.GetRefusal()})
	}
	for j, tc := range m.GetToolCalls() {
		tp := fmt.Sprintf("%s.tool_calls[%d]", p, j)
		if tc.GetType() != "" && tc.GetType() != "function" {
			return nil, unsupported(tp+".type", "only function calls translate, got %q", tc.GetType())
		}
		args := strings.TrimSpace(tc.GetFunction().GetArguments())
		if args == "" {
			args = "{}"
		}
		var input map[string]json.RawMessage
		if err := json.Unmarshal([]byte(args), &input); err != nil || input == nil {
			return nil, unsupported(tp+".function.arguments", "Anthropic needs the arguments as a JSON object")
		}
		out = append(out, ContentBlock{Type: BlockToolUse, ID: tc.GetId(), Name: tc.GetFunction().GetName(), Input: json.RawMessage(args)})
	}
	return out, nil
}

// thinkingBlocks reads thinking_blocks: an array of thinking (with its
// signature) and redacted_thinking blocks, sent back as they are.
func thinkingBlocks(v *structpb.Value, p string) ([]ContentBlock, error) {
	raw, err := v.MarshalJSON()
	if err != nil {
		return nil, unsupported(p, "%v", err)
	}
	var blocks []ContentBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, unsupported(p, "not an array of thinking blocks")
	}
	for j, b := range blocks {
		if b.Type != BlockThinking && b.Type != BlockRedactedThinking {
			return nil, unsupported(fmt.Sprintf("%s[%d].type", p, j), "only thinking and redacted_thinking blocks")
		}
	}
	return blocks, nil
}

// toolResult: a tool message is a tool_result block (in a user turn) for the
// call it answers; its content is a string or text (and image) parts.
func toolResult(m *pb.ChatMessage, p string) ([]ContentBlock, error) {
	if m.GetToolCallId() == "" {
		return nil, unsupported(p+".tool_call_id", "a tool message needs the id of the call it answers")
	}
	b := ContentBlock{Type: BlockToolResult, ToolUseID: m.GetToolCallId()}
	if s, ok := m.GetContent().GetKind().(*structpb.Value_StringValue); ok {
		b.Content = &Content{IsString: true, Text: s.StringValue}
		return []ContentBlock{b}, nil
	}
	blocks, err := parts(m.GetContent(), p+".content", userParts)
	if err != nil {
		return nil, err
	}
	c := BlocksContent(blocks...)
	b.Content = &c
	return []ContentBlock{b}, nil
}
