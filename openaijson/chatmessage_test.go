package openaijson

import (
	"testing"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
)

// chatMessageSeeds are conversations with every ChatMessage member.
var chatMessageSeeds = []string{
	`{"messages":[{"role":"user","content":"hi \"x\"\n\u2028 caf\u00e9"}]}`,
	`{"messages":[{"role":"","content":null},{"role":"system","content":[{"type":"text","text":"t"}]}]}`,
	`{"messages":[{"role":"tool","content":"r","tool_call_id":"c1","name":"n"},{"role":"assistant","refusal":"no"}]}`,
	`{"messages":[{"role":"assistant","content":"a","reasoning_content":"r","annotations":[1,{"x":null}],"z":true}]}`,
	`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`,
	`{"messages":[{"role":"user","content":"x","extra":{"kept":1},"role_json":"y"}]}`,
}

// TestChatMessageFastPathIsTheGenericOne: appendChatMessage writes exactly what
// the reflection encoder writes, member for member.
func TestChatMessageFastPathIsTheGenericOne(t *testing.T) {
	for _, seed := range chatMessageSeeds {
		t.Run(seed, func(t *testing.T) { sameMessageEncoding(t, []byte(seed)) })
	}
}

func FuzzChatMessageFastPath(f *testing.F) {
	for _, seed := range chatMessageSeeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) { sameMessageEncoding(t, data) })
}

func sameMessageEncoding(t *testing.T, data []byte) {
	t.Helper()
	var req pb.ChatCompletionRequest
	if Unmarshal(data, &req) != nil {
		return
	}
	for _, m := range req.Messages {
		fast, generic := appendChatMessage(nil, m), appendObject(nil, m.ProtoReflect(), nil, nil)
		if len(m.ToolCalls) == 0 && string(fast) != string(generic) {
			t.Fatalf("fast path %s, generic %s, for %q", fast, generic, data)
		}
	}
}
