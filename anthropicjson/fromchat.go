package anthropicjson

import (
	"encoding/json"
	"fmt"
	"slices"

	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/openaijson"
)

// DefaultMaxTokens is max_tokens when a chat request sets neither max_tokens nor
// max_completion_tokens and Options.DefaultMaxTokens is 0: Anthropic requires it.
const DefaultMaxTokens = 4096

// Options tune FromChat.
type Options struct {
	// DefaultMaxTokens is max_tokens when the request sets neither max_tokens nor
	// max_completion_tokens (0: the package's DefaultMaxTokens, 4096).
	DefaultMaxTokens int
	// Stream sets "stream": true. The request's own stream member is not read:
	// gRPC callers pick streaming by RPC, so the caller says which call it makes.
	Stream bool
}

// Thinking budgets for reasoning_effort (OpenAI's effort levels mapped onto
// Anthropic's thinking.budget_tokens, 1024 being Anthropic's minimum). "none"
// asks for no thinking. The budget is lowered to max_tokens-1 when max_tokens
// is smaller (Anthropic counts thinking within max_tokens, as OpenAI counts
// reasoning within max_completion_tokens); below 1024 it is a 400.
var effortBudget = map[string]int{"minimal": 1024, "low": 1024, "medium": 4096, "high": 16384}

// FromChat translates an OpenAI chat request into the body of Anthropic's
// POST /v1/messages for model. Members with no meaning there are refused with
// an *UnsupportedError naming them, never dropped; docs/anthropic-mapping.md
// has the whole table.
func FromChat(req *pb.ChatCompletionRequest, model string, opt Options) ([]byte, error) {
	out, err := chatRequest(req, model, opt)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

func chatRequest(req *pb.ChatCompletionRequest, model string, opt Options) (*Request, error) {
	if err := refuseUnsupported(req); err != nil {
		return nil, err
	}
	out := &Request{Model: model, Stream: opt.Stream, Temperature: req.Temperature, TopP: req.TopP}
	out.MaxTokens = opt.DefaultMaxTokens
	if out.MaxTokens <= 0 {
		out.MaxTokens = DefaultMaxTokens
	}
	switch {
	case req.MaxCompletionTokens != nil:
		out.MaxTokens = int(*req.MaxCompletionTokens)
	case req.MaxTokens != nil:
		out.MaxTokens = int(*req.MaxTokens)
	}
	msgs, err := openaijson.Messages(req) // the REST surface keeps them as JSON
	if err != nil {
		return nil, err
	}
	system, turns, err := chatMessages(msgs)
	if err != nil {
		return nil, err
	}
	out.System, out.Messages = system, turns
	if out.StopSequences, err = stopSequences(req.Stop); err != nil {
		return nil, err
	}
	if out.Tools, err = chatTools(req.Tools); err != nil {
		return nil, err
	}
	if out.ToolChoice, err = chatToolChoice(req.ToolChoice, req.ParallelToolCalls); err != nil {
		return nil, err
	}
	if out.Metadata, err = userID(req); err != nil {
		return nil, err
	}
	if req.ReasoningEffort != nil && req.GetExtra().GetFields()["thinking"] == nil {
		if out.Thinking, err = effortThinking(*req.ReasoningEffort, out.MaxTokens); err != nil {
			return nil, err
		}
	}
	if out.Extra, err = passExtra(req.GetExtra(), out); err != nil {
		return nil, err
	}
	return out, nil
}

// refuseUnsupported refuses the modelled members Anthropic has no meaning for
// when they would change the answer (a zero penalty, n=1 or logprobs=false
// change nothing and pass).
func refuseUnsupported(req *pb.ChatCompletionRequest) error {
	switch {
	case req.N != nil && *req.N != 1:
		return unsupported("n", "Anthropic returns one choice")
	case len(req.LogitBias) > 0:
		return unsupported("logit_bias", "Anthropic has no token biases")
	case req.GetLogprobs():
		return unsupported("logprobs", "Anthropic returns no log probabilities")
	case req.TopLogprobs != nil && *req.TopLogprobs != 0:
		return unsupported("top_logprobs", "Anthropic returns no log probabilities")
	case req.GetPresencePenalty() != 0:
		return unsupported("presence_penalty", "Anthropic has no presence penalty")
	case req.GetFrequencyPenalty() != 0:
		return unsupported("frequency_penalty", "Anthropic has no frequency penalty")
	case req.GetTemperature() > 1:
		return unsupported("temperature", "Anthropic's temperature is 0 to 1, got %g", req.GetTemperature())
	case req.Seed != nil:
		return unsupported("seed", "Anthropic has no sampling seed")
	case len(req.Metadata) > 0:
		return unsupported("metadata", "Anthropic's metadata holds only user_id (send user)")
	}
	if rf := req.GetResponseFormat(); rf != nil {
		if typ := rf.GetFields()["type"].GetStringValue(); typ != "text" {
			return unsupported("response_format", "Anthropic has no %q output format", typ)
		}
	}
	return nil
}

// openAIOnly are request members (kept in extra) that only OpenAI knows; each
// passes only with the value that asks for nothing (allowed), else it is refused.
var openAIOnly = map[string]func(*structpb.Value) bool{
	"audio":                  nil,
	"modalities":             func(v *structpb.Value) bool { return isTextOnly(v) },
	"prediction":             nil,
	"web_search_options":     nil,
	"functions":              nil,
	"function_call":          nil,
	"store":                  func(v *structpb.Value) bool { return !v.GetBoolValue() },
	"verbosity":              nil,
	"prompt_cache_key":       nil,
	"prompt_cache_retention": nil,
	"service_tier":           func(v *structpb.Value) bool { return v.GetStringValue() == "auto" },
}

func isTextOnly(v *structpb.Value) bool {
	l := v.GetListValue().GetValues()
	return len(l) == 1 && l[0].GetStringValue() == "text"
}

// passExtra returns the request's unknown members, which reach Anthropic
// unchanged (top_k, thinking, service_tier "auto", container, mcp_servers, ...:
// Anthropic judges them), but for OpenAI-only members (refused, or dropped when
// their value asks for nothing) and members the translation already wrote.
func passExtra(extra *structpb.Struct, out *Request) (Extra, error) {
	if len(extra.GetFields()) == 0 {
		return nil, nil
	}
	written, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	var have map[string]json.RawMessage
	if err := json.Unmarshal(written, &have); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(extra.GetFields()))
	for name := range extra.GetFields() {
		names = append(names, name)
	}
	slices.Sort(names) // the first refusal is the same every time
	var kept Extra
	for _, name := range names {
		v := extra.GetFields()[name]
		if name == "safety_identifier" { // read by userID
			continue
		}
		if allowed, ok := openAIOnly[name]; ok {
			if allowed == nil || !allowed(v) {
				return nil, unsupported(name, "it is an OpenAI-only parameter")
			}
			if name != "service_tier" { // Anthropic knows service_tier "auto"
				continue
			}
		}
		if _, ok := have[name]; ok {
			return nil, unsupported(name, "the translated request already has %s", name)
		}
		raw, err := v.MarshalJSON()
		if err != nil {
			return nil, unsupported(name, "%v", err)
		}
		if kept == nil {
			kept = Extra{}
		}
		kept[name] = raw
	}
	return kept, nil
}

// userID is metadata.user_id: user, or else safety_identifier (OpenAI's newer
// name for the same end-user identifier, in extra).
func userID(req *pb.ChatCompletionRequest) (*Metadata, error) {
	safety, hasSafety := req.GetExtra().GetFields()["safety_identifier"]
	if hasSafety {
		if _, ok := safety.GetKind().(*structpb.Value_StringValue); !ok {
			return nil, unsupported("safety_identifier", "not a string")
		}
	}
	switch {
	case req.GetUser() != "" && hasSafety && safety.GetStringValue() != req.GetUser():
		return nil, unsupported("safety_identifier", "Anthropic has one user_id and user differs")
	case req.GetUser() != "":
		return &Metadata{UserID: req.GetUser()}, nil
	case safety.GetStringValue() != "":
		return &Metadata{UserID: safety.GetStringValue()}, nil
	}
	return nil, nil
}

func effortThinking(effort string, maxTokens int) (*Thinking, error) {
	if effort == "none" {
		return nil, nil
	}
	budget, ok := effortBudget[effort]
	if !ok {
		return nil, unsupported("reasoning_effort", "unknown effort %q", effort)
	}
	budget = min(budget, maxTokens-1)
	if budget < 1024 {
		return nil, unsupported("reasoning_effort", "thinking needs max_completion_tokens of at least 1025, got %d", maxTokens)
	}
	return &Thinking{Type: "enabled", BudgetTokens: budget}, nil
}

func stopSequences(stop *structpb.Value) ([]string, error) {
	switch k := stop.GetKind().(type) {
	case nil, *structpb.Value_NullValue:
		return nil, nil
	case *structpb.Value_StringValue:
		return []string{k.StringValue}, nil
	case *structpb.Value_ListValue:
		var out []string
		for i, v := range k.ListValue.GetValues() {
			s, ok := v.GetKind().(*structpb.Value_StringValue)
			if !ok {
				return nil, unsupported(fmt.Sprintf("stop[%d]", i), "not a string")
			}
			out = append(out, s.StringValue)
		}
		return out, nil
	}
	return nil, unsupported("stop", "neither a string nor an array of strings")
}

func chatTools(tools []*pb.Tool) ([]Tool, error) {
	var out []Tool
	for i, t := range tools {
		p := fmt.Sprintf("tools[%d]", i)
		if t.GetType() != "function" {
			return nil, unsupported(p+".type", "only function tools translate, got %q", t.GetType())
		}
		f := t.GetFunction()
		if f.GetName() == "" {
			return nil, unsupported(p+".function.name", "a tool needs a name")
		}
		tool := Tool{Name: f.GetName(), Description: f.GetDescription(), InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)}
		if f.GetParameters() != nil {
			schema, err := f.GetParameters().MarshalJSON()
			if err != nil {
				return nil, unsupported(p+".function.parameters", "%v", err)
			}
			tool.InputSchema = schema
		}
		var err error
		if tool.CacheControl, err = cacheControlOnly(t.GetExtra(), p); err != nil {
			return nil, err
		}
		if _, err := cacheControlOnly(f.GetExtra(), p+".function"); err != nil {
			return nil, err
		}
		out = append(out, tool)
	}
	return out, nil
}

// cacheControlOnly returns extra's cache_control (Anthropic's prompt caching
// marker, which clients put on tools and content parts) and refuses any other
// member there.
func cacheControlOnly(extra *structpb.Struct, param string) (json.RawMessage, error) {
	var cc json.RawMessage
	names := make([]string, 0, len(extra.GetFields()))
	for name := range extra.GetFields() {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if name != "cache_control" {
			return nil, unsupported(param+"."+name, "no Anthropic equivalent")
		}
		raw, err := extra.GetFields()[name].MarshalJSON()
		if err != nil {
			return nil, unsupported(param+"."+name, "%v", err)
		}
		cc = raw
	}
	return cc, nil
}

func chatToolChoice(choice *structpb.Value, parallel *bool) (*ToolChoice, error) {
	var out *ToolChoice
	switch k := choice.GetKind().(type) {
	case nil, *structpb.Value_NullValue:
	case *structpb.Value_StringValue:
		switch k.StringValue {
		case "auto":
			out = &ToolChoice{Type: "auto"}
		case "required":
			out = &ToolChoice{Type: "any"}
		case "none":
			out = &ToolChoice{Type: "none"}
		default:
			return nil, unsupported("tool_choice", "unknown value %q", k.StringValue)
		}
	case *structpb.Value_StructValue:
		f := k.StructValue.GetFields()
		name := f["function"].GetStructValue().GetFields()["name"].GetStringValue()
		if f["type"].GetStringValue() != "function" || name == "" {
			return nil, unsupported("tool_choice", "only {\"type\":\"function\",\"function\":{\"name\":...}} translates")
		}
		out = &ToolChoice{Type: "tool", Name: name}
	default:
		return nil, unsupported("tool_choice", "neither a string nor an object")
	}
	if parallel != nil && !*parallel {
		if out == nil {
			out = &ToolChoice{Type: "auto"}
		}
		if out.Type != "none" {
			yes := true
			out.DisableParallelToolUse = &yes
		}
	}
	return out, nil
}
