// Package anthropicjson holds the wire types of Anthropic's Messages API
// (POST /v1/messages, its stream events and its error body) and the pure
// translation between that API and OpenAI's chat completions (Switchyard's
// protos): FromChat, ToCompletion and ChunkTranslator for Anthropic targets
// (providers/anthropic), ToChat and FromCompletion for the /v1/messages
// surface in front of other targets.
//
// The types use encoding/json. Where a member must survive untouched it is a
// json.RawMessage (tool input and schemas, cache_control, citations); members
// the types do not model are kept in Extra on Request, Message, Tool,
// ContentBlock, Response and Usage, and written back. They are dropped only on
// the small objects whose members are all modelled (ImageSource, ToolChoice,
// Thinking, Metadata, the stream event envelopes, Delta, ErrorBody).
package anthropicjson

import (
	"bytes"
	"encoding/json"
	"reflect"
)

// Content block types.
const (
	BlockText             = "text"
	BlockImage            = "image"
	BlockDocument         = "document"
	BlockToolUse          = "tool_use"
	BlockToolResult       = "tool_result"
	BlockThinking         = "thinking"
	BlockRedactedThinking = "redacted_thinking"
)

// Stream event types (the "event:" line and the payload's "type").
const (
	EventMessageStart      = "message_start"
	EventContentBlockStart = "content_block_start"
	EventContentBlockDelta = "content_block_delta"
	EventContentBlockStop  = "content_block_stop"
	EventMessageDelta      = "message_delta"
	EventMessageStop       = "message_stop"
	EventPing              = "ping"
	EventError             = "error"
)

// Delta types of content_block_delta.
const (
	DeltaText      = "text_delta"
	DeltaInputJSON = "input_json_delta"
	DeltaThinking  = "thinking_delta"
	DeltaSignature = "signature_delta"
	DeltaCitations = "citations_delta"
)

// Stop reasons.
const (
	StopEndTurn      = "end_turn"
	StopMaxTokens    = "max_tokens"
	StopStopSequence = "stop_sequence"
	StopToolUse      = "tool_use"
	StopPauseTurn    = "pause_turn"
	StopRefusal      = "refusal"
)

// Request is the body of POST /v1/messages.
type Request struct {
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`
	// System is the system prompt: a string or an array of text blocks.
	System    *Content `json:"system,omitempty"`
	MaxTokens int      `json:"max_tokens"`
	// Sampling parameters; nil is unset.
	Temperature   *float64    `json:"temperature,omitempty"`
	TopP          *float64    `json:"top_p,omitempty"`
	TopK          *int        `json:"top_k,omitempty"`
	StopSequences []string    `json:"stop_sequences,omitempty"`
	Stream        bool        `json:"stream,omitempty"`
	Tools         []Tool      `json:"tools,omitempty"`
	ToolChoice    *ToolChoice `json:"tool_choice,omitempty"`
	Thinking      *Thinking   `json:"thinking,omitempty"`
	Metadata      *Metadata   `json:"metadata,omitempty"`
	// Extra: members not modelled above (service_tier, container, mcp_servers, ...).
	Extra Extra `json:"-"`
}

// Message is one turn of the conversation: role "user" or "assistant".
type Message struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
	Extra   Extra   `json:"-"`
}

// Content is a member that is a string or an array of content blocks
// (message content, system, tool_result content).
type Content struct {
	// IsString is set when the JSON was a string (in Text); else Blocks holds the array.
	IsString bool
	Text     string
	Blocks   []ContentBlock
}

// TextContent is the string form of Content.
func TextContent(s string) Content { return Content{IsString: true, Text: s} }

// BlocksContent is the array form of Content.
func BlocksContent(blocks ...ContentBlock) Content { return Content{Blocks: blocks} }

// AsBlocks returns the content as blocks: the string form is one text block
// (none for "").
func (c Content) AsBlocks() []ContentBlock {
	if !c.IsString {
		return c.Blocks
	}
	if c.Text == "" {
		return nil
	}
	return []ContentBlock{{Type: BlockText, Text: c.Text}}
}

// MarshalJSON writes a string or an array (never null: nil Blocks is []).
func (c Content) MarshalJSON() ([]byte, error) {
	if c.IsString {
		return json.Marshal(c.Text)
	}
	if c.Blocks == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(c.Blocks)
}

// UnmarshalJSON reads a string or an array of blocks; null leaves the zero Content.
func (c *Content) UnmarshalJSON(data []byte) error {
	*c = Content{}
	switch t := bytes.TrimLeft(data, " \t\r\n"); {
	case len(t) > 0 && t[0] == '"':
		c.IsString = true
		return json.Unmarshal(data, &c.Text)
	case len(t) > 0 && t[0] == '[':
		return json.Unmarshal(data, &c.Blocks)
	case bytes.Equal(bytes.TrimSpace(t), []byte("null")):
		return nil
	}
	// A type error, so that the decoder names where it was (system, messages.content).
	return &json.UnmarshalTypeError{Value: "value", Type: reflect.TypeFor[Content]()}
}

// ContentBlock is one content block. Type says which members mean something:
//   - text: Text (always written), Citations;
//   - image, document: Source (document's title, context, citations stay in Extra);
//   - tool_use (and server_tool_use): ID, Name, Input (written as {} when empty);
//   - tool_result: ToolUseID, Content, IsError;
//   - thinking: Thinking and Signature (both always written);
//   - redacted_thinking: Data.
//
// CacheControl is kept on every type; any other member stays in Extra.
type ContentBlock struct {
	Type         string          `json:"type"`
	Text         string          `json:"text,omitempty"`
	Citations    json.RawMessage `json:"citations,omitempty"`
	Source       *ImageSource    `json:"source,omitempty"`
	ID           string          `json:"id,omitempty"`
	Name         string          `json:"name,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
	ToolUseID    string          `json:"tool_use_id,omitempty"`
	Content      *Content        `json:"content,omitempty"`
	IsError      *bool           `json:"is_error,omitempty"`
	Thinking     string          `json:"thinking,omitempty"`
	Signature    string          `json:"signature,omitempty"`
	Data         string          `json:"data,omitempty"`
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
	Extra        Extra           `json:"-"`
}

// ImageSource is an image's (or document's) source: type "base64" (MediaType,
// Data), "url" (URL) or "file" (FileID).
type ImageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
	FileID    string `json:"file_id,omitempty"`
}

// Tool is a tool the model may use: a client tool (Name, Description,
// InputSchema) or a server tool (Type such as "web_search_20250305", its
// settings in Extra).
type Tool struct {
	Type         string          `json:"type,omitempty"`
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema,omitempty"`
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
	Extra        Extra           `json:"-"`
}

// ToolChoice is tool_choice: Type "auto", "any", "tool" (with Name) or "none".
type ToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse *bool  `json:"disable_parallel_tool_use,omitempty"`
}

// Thinking is extended thinking: Type "enabled" (with BudgetTokens) or "disabled".
type Thinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens,omitempty"`
}

// Metadata is the request's metadata.
type Metadata struct {
	UserID string `json:"user_id,omitempty"`
}

// Response is a message object: the answer of POST /v1/messages, and the
// message of a message_start event (content empty, stop_reason null).
type Response struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"` // "message"
	Role         string         `json:"role"` // "assistant"
	Model        string         `json:"model"`
	Content      []ContentBlock `json:"content"`
	StopReason   *string        `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        Usage          `json:"usage"`
	Extra        Extra          `json:"-"`
}

// Usage counts a message's tokens. InputTokens excludes the cached tokens, which
// are counted apart (read from the cache, written to it). Members such as
// cache_creation, server_tool_use and service_tier stay in Extra.
type Usage struct {
	InputTokens              int   `json:"input_tokens"`
	OutputTokens             int   `json:"output_tokens"`
	CacheCreationInputTokens *int  `json:"cache_creation_input_tokens,omitempty"`
	CacheReadInputTokens     *int  `json:"cache_read_input_tokens,omitempty"`
	Extra                    Extra `json:"-"`
}

// MessageStartEvent is the payload of message_start.
type MessageStartEvent struct {
	Type    string   `json:"type"`
	Message Response `json:"message"`
}

// ContentBlockStartEvent is the payload of content_block_start: the block as it
// starts (text "", tool_use input {}, thinking "" with signature "").
type ContentBlockStartEvent struct {
	Type         string       `json:"type"`
	Index        int          `json:"index"`
	ContentBlock ContentBlock `json:"content_block"`
}

// ContentBlockDeltaEvent is the payload of content_block_delta.
type ContentBlockDeltaEvent struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
	Delta Delta  `json:"delta"`
}

// Delta is a content block delta. Type says which member is set (and always
// written): text_delta Text, input_json_delta PartialJSON, thinking_delta
// Thinking, signature_delta Signature, citations_delta Citation.
type Delta struct {
	Type        string          `json:"type"`
	Text        string          `json:"text,omitempty"`
	PartialJSON string          `json:"partial_json,omitempty"`
	Thinking    string          `json:"thinking,omitempty"`
	Signature   string          `json:"signature,omitempty"`
	Citation    json.RawMessage `json:"citation,omitempty"`
}

// ContentBlockStopEvent is the payload of content_block_stop.
type ContentBlockStopEvent struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
}

// MessageDeltaEvent is the payload of message_delta: the stop reason and the
// usage so far (output_tokens cumulative; input and cache counts when given).
type MessageDeltaEvent struct {
	Type  string       `json:"type"`
	Delta MessageDelta `json:"delta"`
	Usage DeltaUsage   `json:"usage"`
}

// MessageDelta is message_delta's delta.
type MessageDelta struct {
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
}

// DeltaUsage is message_delta's usage: nil members were not sent.
type DeltaUsage struct {
	InputTokens              *int  `json:"input_tokens,omitempty"`
	OutputTokens             int   `json:"output_tokens"`
	CacheCreationInputTokens *int  `json:"cache_creation_input_tokens,omitempty"`
	CacheReadInputTokens     *int  `json:"cache_read_input_tokens,omitempty"`
	Extra                    Extra `json:"-"`
}

// TypeOnlyEvent is the payload of message_stop and ping.
type TypeOnlyEvent struct {
	Type string `json:"type"`
}

// ErrorBody is Anthropic's error: the body of a failed request and the payload
// of an in-band "error" stream event.
type ErrorBody struct {
	Type  string      `json:"type"` // "error"
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is an error's type (e.g. "overloaded_error") and message.
type ErrorDetail struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}
