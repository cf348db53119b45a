package openaijson

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
)

// keptByREST says whether the REST surface would send raw, as a body's
// "messages" member, upstream as it is (UnmarshalChat keeps it), and Messages
// takes it as a gRPC caller's messages_json (one array, nothing after it).
func keptByREST(raw []byte) bool {
	var tmp pb.ChatCompletionRequest
	body := append(append([]byte(`{"messages":`), raw...), '}')
	if UnmarshalChat(body, &tmp) != nil || len(tmp.GetMessagesJson()) == 0 {
		return false
	}
	_, err := Messages(&pb.ChatCompletionRequest{MessagesJson: raw})
	return err == nil
}

// holdsToREST fails t unless KeepMessagesJSON keeps raw exactly when the REST
// surface would, and what it keeps decodes without error.
func holdsToREST(t *testing.T, raw []byte) {
	t.Helper()
	req := &pb.ChatCompletionRequest{MessagesJson: raw}
	keep := KeepMessagesJSON(req)
	if want := keptByREST(raw); keep != want {
		t.Fatalf("%.200q: kept %v, the REST surface's check %v", raw, keep, want)
	}
	if _, err := Messages(req); keep && err != nil {
		t.Fatalf("%.200q: kept, but decoding it fails: %v", raw, err)
	}
}

// TestKeepMessagesJSON: a gRPC caller's messages_json goes upstream as it is
// exactly when the REST surface's check would send it so; anything else is left
// to decoding, which names the fault or mends the text.
func TestKeepMessagesJSON(t *testing.T) {
	// Depth counts the request object, the list and the message: deep reaches MaxDepth.
	deep := strings.Repeat("[", MaxDepth-3) + strings.Repeat("]", MaxDepth-3)
	tooDeep := strings.Repeat("[", MaxDepth-2) + strings.Repeat("]", MaxDepth-2)
	cases := []struct {
		name string
		raw  string
		keep bool
	}{
		{"one message", `[{"role":"user","content":"hi"}]`, true},
		{"spaces around and inside", " \n[ {\"role\" : \"user\", \"content\":\"hi\"} ]\t", true},
		{"escapes and non-ASCII", `[{"role":"user","content":"a \"q\"\n\u00e9 漢字 \ud83d\ude00"}]`, true},
		{"unknown members", `[{"role":"user","content":"hi","x_trace":{"a":[1,2]}}]`, true},
		{"content parts and tool calls", `[{"role":"user","content":[{"type":"text","text":"hi"}]},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}]`, true},
		{"nesting at the limit", `[{"role":"user","content":"hi","x":` + deep + `}]`, true},
		{"nesting past the limit", `[{"role":"user","content":"hi","x":` + tooDeep + `}]`, false},
		{"empty", `[]`, false},
		{"no role", `[{"content":"x"}]`, false},
		{"empty role", `[{"role":"","content":"x"}]`, false},
		{"role of another type", `[{"role":5,"content":"x"}]`, false},
		{"not JSON", `[{"role":`, false},
		{"an object", `{"role":"user"}`, false},
		{"members after the array", `[{"role":"user","content":"hi"}],"model":"o1-pro"`, false},
		{"two arrays", `[{"role":"user","content":"hi"}] []`, false},
		{"invalid UTF-8 (decoding mends it)", "[{\"role\":\"user\",\"content\":\"a\xffb\"}]", false},
		{"a lone surrogate (decoding mends it)", `[{"role":"user","content":"\ud800"}]`, false},
		{"a message that is not an object", `[{"role":"user","content":"hi"},"x"]`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.keep, KeepMessagesJSON(&pb.ChatCompletionRequest{MessagesJson: []byte(tc.raw)}))
			holdsToREST(t, []byte(tc.raw))
		})
	}
	t.Run("none", func(t *testing.T) {
		require.False(t, KeepMessagesJSON(&pb.ChatCompletionRequest{}))
	})
}

// FuzzKeepMessagesJSON holds KeepMessagesJSON to the REST surface's check on any
// bytes.
func FuzzKeepMessagesJSON(f *testing.F) {
	for _, s := range []string{`[{"role":"user","content":"hi"}]`, `[{"role":"user","content":"a\ud800"}] `,
		`[{"role":"tool","tool_call_id":"c","content":[{"type":"text","text":"x"}]}]`, `[{"role":"user"}],"n":2`} {
		f.Add([]byte(s))
	}
	var tmp pb.ChatCompletionRequest
	if err := Unmarshal(shortTurns(30), &tmp); err != nil {
		f.Fatal(err)
	}
	f.Add(Marshal(&pb.ChatCompletionRequest{Messages: tmp.Messages})[len(`{"messages":`):])
	f.Fuzz(func(t *testing.T, raw []byte) { holdsToREST(t, raw) })
}

// BenchmarkGRPCMessagesJSON: a gRPC caller's 512 KB history sent as JSON,
// checked and kept (KeepMessagesJSON) against decoded and encoded again (what
// Messages and the upstream body's encoder did with it before).
func BenchmarkGRPCMessagesJSON(b *testing.B) {
	body := longChat(512)
	start := bytes.Index(body, []byte(`"messages":`)) + len(`"messages":`)
	var tmp pb.ChatCompletionRequest
	if err := UnmarshalChat(body, &tmp); err != nil || len(tmp.MessagesJson) == 0 {
		b.Fatal("not kept", err)
	}
	raw := body[start : start+len(tmp.MessagesJson)]
	req := &pb.ChatCompletionRequest{Model: "m", MessagesJson: raw}
	b.Run("kept", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			if !KeepMessagesJSON(req) {
				b.Fatal("not kept")
			}
		}
	})
	b.Run("decoded", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		out := make([]byte, 0, 2*len(raw))
		for b.Loop() {
			msgs, err := Messages(req)
			if err != nil {
				b.Fatal(err)
			}
			out = Append(out[:0], &pb.ChatCompletionRequest{Model: "m", Messages: msgs})
		}
	})
}
