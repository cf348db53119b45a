package openaijson

import (
	"encoding/json"
	"runtime"
	"strconv"
	"strings"
	"testing"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
)

// longChat is a chat request of about kb kilobytes: alternating turns of prose
// with quotes, newlines, tabs, backslashes and non-ASCII text.
func longChat(kb int) []byte {
	const turn = "The \"gateway\" forwards each request\tto its target; when the target fails, " +
		"it retries with backoff and jitter,\nthen fails over to the next one in the chain. " +
		"Café, naïve, 漢字, ✓. Numbers: 3.14159, 2.71828; paths: C:\\tmp\\x.json. "
	type msg struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	msgs := []msg{{"system", "You are a helpful assistant."}}
	for size, i := 0, 0; size < kb<<10; i++ {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		text := strings.Repeat(turn, 4)
		msgs = append(msgs, msg{role, text})
		size += len(text) + 40
	}
	b, _ := json.Marshal(map[string]any{"model": "openai/gpt-4o", "messages": msgs, "max_tokens": 64})
	return b
}

// shortTurns is a chat request of n short turns (an agent's history: many
// messages of a sentence each, tool calls among them).
func shortTurns(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"openai/gpt-4o","messages":[{"role":"system","content":"You are a helpful assistant."}`)
	for i := range n {
		switch i % 3 {
		case 0:
			b.WriteString(`,{"role":"user","content":"What is the status of order ` + strconv.Itoa(i) + `?"}`)
		case 1:
			b.WriteString(`,{"role":"assistant","content":null,"tool_calls":[{"id":"call_` + strconv.Itoa(i) +
				`","type":"function","function":{"name":"lookup_order","arguments":"{\"id\":` + strconv.Itoa(i) + `}"}}]}`)
		default:
			b.WriteString(`,{"role":"tool","tool_call_id":"call_` + strconv.Itoa(i-1) + `","content":"{\"status\":\"shipped\"}"}`)
		}
	}
	b.WriteString(`],"max_tokens":64}`)
	return []byte(b.String())
}

func BenchmarkUnmarshalChatShortTurns(b *testing.B) { benchRaw(b, shortTurns(600)) }

// benchRaw measures UnmarshalChat keeping body's conversation as bytes.
func benchRaw(b *testing.B, body []byte) {
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var req pb.ChatCompletionRequest
		if err := UnmarshalChat(body, &req); err != nil || len(req.MessagesJson) == 0 {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnmarshalChatLong(b *testing.B) {
	for _, kb := range []int{64, 512} {
		body := longChat(kb)
		b.Run(strconv.Itoa(kb)+"KB/raw", func(b *testing.B) { benchRaw(b, body) })
		b.Run(strconv.Itoa(kb)+"KB/decoded", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				var req pb.ChatCompletionRequest
				if err := Unmarshal(body, &req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestLongPromptAllocationCeiling: a long conversation read from REST and
// written upstream costs a handful of small allocations, whatever its size (the
// body buffer and the upstream buffer are the callers'): a regression that
// decodes or copies the conversation again fails here, without timing anything.
func TestLongPromptAllocationCeiling(t *testing.T) {
	for _, kb := range []int{64, 512} {
		t.Run(strconv.Itoa(kb)+"KB", func(t *testing.T) {
			body := longChat(kb)
			var req pb.ChatCompletionRequest
			read := func() {
				if err := UnmarshalChat(body, &req); err != nil || len(req.MessagesJson) == 0 {
					t.Fatal("not kept as bytes", err)
				}
			}
			if n := testing.AllocsPerRun(20, read); n > 12 {
				t.Errorf("reading: %.0f allocations", n)
			}
			buf := make([]byte, 0, len(body)+1024)
			write := func() { buf = Append(buf[:0], &req) }
			if n := testing.AllocsPerRun(20, write); n > 6 { // 4 today: the small fields' reflection
				t.Errorf("writing: %.0f allocations", n)
			}
			// In pieces (as the upstream body is sent), the conversation is not copied
			// at all: what is allocated is the small fields' JSON, whatever the size.
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for range 20 {
				_ = AppendPieces(nil, &req)
			}
			runtime.ReadMemStats(&after)
			if per := (after.TotalAlloc - before.TotalAlloc) / 20; per > 4<<10 {
				t.Errorf("writing in pieces: %d bytes allocated per request", per)
			}
		})
	}
}
