package openai

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/switchyard/switchyard/providers"
)

// FuzzStream feeds arbitrary bytes to the SSE stream reader: it must never panic
// or hang, and must end with io.EOF (only after a final event), a StreamError, or
// — before the first event — a provider Error.
func FuzzStream(f *testing.F) {
	head := `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"a"}`
	for _, seed := range []string{
		head + "}]}\n\n" + head + `,"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n",
		head + "}]}\r\n\r\n: comment\r\nevent: x\r\ndata: [DONE]\r\n\r\n",
		"data: {\"error\":{\"message\":\"x\",\"code\":429}}\n\n",
		"data: [DONE]\n\n", "", "data:", "\n\n\n", head + "}]}\n\ndata: {\"choices\":[{\"index\":\"zero\"}]}\n\n",
		"data: {\"a\":\ndata: 1}\n\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		s := &stream{c: &Client{name: "fuzz"}, ctx: ctx, cancel: cancel, model: "m",
			body: io.NopCloser(bytes.NewReader(data)), events: eventReader{rd: bufio.NewReaderSize(bytes.NewReader(data), 16)}}
		err := s.readFirst()
		if err != nil {
			var pe *providers.Error
			if !errors.As(err, &pe) {
				t.Fatalf("first event: unexpected error type %T: %v", err, err)
			}
			return
		}
		if len(s.held) == 0 {
			t.Fatal("no chunk and no error")
		}
		for i := 0; i <= len(data)+2; i++ {
			chunk, err := s.Recv()
			if errors.Is(err, io.EOF) {
				if !s.finished {
					t.Fatal("a clean end without a final event")
				}
				return
			}
			if err != nil {
				if !errors.Is(err, providers.ErrStreamIncomplete) {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if chunk == nil {
				t.Fatal("nil chunk without error")
			}
		}
		t.Fatal("the stream did not end")
	})
}
