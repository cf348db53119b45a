package simulator

import (
	"encoding/json"
	"hash/fnv"
	"sort"
	"strconv"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/openaijson"
)

// toolCall is the call the simulator makes when a request offers tools: the tool
// tool_choice names (else the first one), with arguments filled from its JSON
// Schema, deterministically from the prompt. It makes no call when tool_choice is
// "none", when no tools are offered, or when the last message is a tool result
// (the caller has run the tool: the simulator then answers in text, so a tool loop
// ends).
func toolCall(req *pb.ChatCompletionRequest, prompt string) (name, args, id string, ok bool) {
	tools := req.GetTools()
	if len(tools) == 0 {
		return "", "", "", false
	}
	msgs, _ := openaijson.Messages(req) // checked before any provider is called
	if n := len(msgs); n > 0 && msgs[n-1].GetRole() == "tool" {
		return "", "", "", false
	}
	tool := tools[0]
	switch c := req.GetToolChoice(); {
	case c.GetStringValue() == "none":
		return "", "", "", false
	case c.GetStructValue() != nil:
		want := c.GetStructValue().GetFields()["function"].GetStructValue().GetFields()["name"].GetStringValue()
		for _, t := range tools {
			if t.GetFunction().GetName() == want {
				tool = t
			}
		}
	}
	fn := tool.GetFunction()
	b, _ := json.Marshal(arguments(fn.GetParameters(), prompt)) // maps of JSON values: cannot fail
	h := fnv.New64a()
	h.Write([]byte(prompt + "\x00" + fn.GetName()))
	return fn.GetName(), string(b), "call_sim_" + strconv.FormatUint(h.Sum64()%1e12, 36), true
}

// arguments fills every property of an object schema with a value of its type.
func arguments(schema *structpb.Struct, prompt string) map[string]any {
	out := map[string]any{}
	props := schema.GetFields()["properties"].GetStructValue().GetFields()
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	for i, k := range names {
		out[k] = sample(props[k].GetStructValue(), prompt+k, i)
	}
	return out
}

// sample is a deterministic value that satisfies a (simple) JSON Schema.
func sample(s *structpb.Struct, seed string, i int) any {
	f := s.GetFields()
	if enum := f["enum"].GetListValue().GetValues(); len(enum) > 0 {
		return enum[0].AsInterface()
	}
	switch f["type"].GetStringValue() {
	case "integer":
		return i + 1
	case "number":
		return float64(i) + 0.5
	case "boolean":
		return true
	case "array":
		return []any{sample(f["items"].GetStructValue(), seed, i)}
	case "object":
		return arguments(s, seed)
	}
	return words(seed, 1)[0]
}

// pieces splits tool arguments into the short fragments a streaming model sends.
func pieces(s string) []string {
	const size = 8
	var out []string
	for len(s) > size {
		n := size
		for n < len(s) && !utf8.RuneStart(s[n]) {
			n++
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}
