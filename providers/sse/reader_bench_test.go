package sse

import (
	"bufio"
	"strings"
	"testing"
)

// cycle reads its bytes over and over, in reads of at most n bytes (an
// upstream's packets).
type cycle struct {
	b   []byte
	off int
	n   int
}

func (c *cycle) Read(p []byte) (int, error) {
	p = p[:min(len(p), c.n)]
	n := 0
	for n < len(p) {
		k := copy(p[n:], c.b[c.off:])
		n += k
		c.off = (c.off + k) % len(c.b)
	}
	return n, nil
}

// BenchmarkReader reads ordinary streams, one event per op: OpenAI's data-only
// chunks (LF and CRLF) and Anthropic's typed events.
func BenchmarkReader(b *testing.B) {
	chunk := `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"Hello there"},"finish_reason":null}]}`
	delta := `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello there"}}`
	for _, bc := range []struct{ name, ev string }{
		{"openai lf", "data: " + chunk + "\n\n"},
		{"openai crlf", "data: " + chunk + "\r\n\r\n"},
		{"anthropic lf", "event: content_block_delta\ndata: " + delta + "\n\n"},
	} {
		b.Run(strings.ReplaceAll(bc.name, " ", "_"), func(b *testing.B) {
			r := Buffered(bufio.NewReaderSize(&cycle{b: []byte(strings.Repeat(bc.ev, 64)), n: 1400}, bufSize))
			b.SetBytes(int64(len(bc.ev)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Next(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
