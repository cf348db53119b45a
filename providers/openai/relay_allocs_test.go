package openai

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/providers/sse"
)

// TestNextRawAllocatesNothingForChoiceZero: the REST relay's per-chunk path reads
// an ordinary n=1 chunk (choice 0 alone, finishing or not) without decoding it;
// only chunks with other indexes are decoded.
func TestNextRawAllocatesNothingForChoiceZero(t *testing.T) {
	const open = `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}` + "\n\n"
	const stop = `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n"
	const other = `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":1,"delta":{"content":"a"},"finish_reason":null}]}` + "\n\n"
	cases := []struct {
		name    string
		event   string
		ceiling float64
	}{
		{"choice 0", open, 0},
		{"choice 0 finishing", stop, 0},
		{"choice 1 (decoded)", other, 1000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			const runs = 200
			data := []byte(open + strings.Repeat(tc.event, runs+2))
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			s := newStream(&Client{name: "allocs"}, sse.NewConnReader(ctx, cancel, io.NopCloser(bytes.NewReader(nil)),
				sse.Buffered(bufio.NewReaderSize(bytes.NewReader(data), 32<<10))), "m", 1)
			if err := s.readFirst(); err != nil {
				t.Fatal(err)
			}
			if _, err := s.NextRaw(); err != nil { // the held chunk
				t.Fatal(err)
			}
			got := testing.AllocsPerRun(runs, func() {
				if _, err := s.NextRaw(); err != nil {
					t.Fatal(err)
				}
			})
			if got > tc.ceiling {
				t.Errorf("%.0f allocations a chunk, ceiling %.0f", got, tc.ceiling)
			}
			if tc.ceiling > 0 && got == 0 {
				t.Errorf("a chunk with another index was not decoded")
			}
		})
	}
}
