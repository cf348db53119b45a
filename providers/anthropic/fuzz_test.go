package anthropic

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/switchyard/switchyard/anthropicjson"
	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/providers/sse"
)

func fuzzConn(data []byte) *sse.Conn {
	ctx, cancel := context.WithCancelCause(context.Background())
	c := sse.NewConnReader(ctx, cancel, io.NopCloser(bytes.NewReader(nil)), sse.Buffered(bufio.NewReaderSize(bytes.NewReader(data), 16)))
	c.Provider = "fuzz"
	return c
}

func addSeeds(f *testing.F) {
	start := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"x\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n"
	block := "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
	delta := "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n"
	stop := "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	for _, seed := range []string{
		start + block + delta + stop, start + block + delta, start + block + delta + "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"o\"}}\n\n",
		"event: ping\ndata: {}\n\n", "", "data: {\n\n", start + block + delta + "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n" + delta,
	} {
		f.Add([]byte(seed))
	}
}

// FuzzChatStream feeds arbitrary bytes to the chat stream: it must never panic or
// hang, fail before its first content with a *providers.Error, and end with
// io.EOF only after message_stop or message_delta's stop_reason (else an error
// wrapping ErrStreamIncomplete).
func FuzzChatStream(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &chatStream{c: &Client{name: "fuzz"}, conn: fuzzConn(data), tr: anthropicjson.NewChunkTranslator(true, time.Unix(1, 0))}
		defer s.Close()
		if err := s.readFirst(); err != nil {
			var pe *providers.Error
			if !errors.As(err, &pe) {
				t.Fatalf("before the first content: %T %v", err, err)
			}
			return
		}
		for i := 0; i <= len(data)+4; i++ {
			_, err := s.Recv()
			switch {
			case err == nil:
				continue
			case errors.Is(err, io.EOF):
				if !s.tr.Complete() && !s.tr.Finished() {
					// message_delta's stop_reason makes the answer whole: a cut after
					// it is a clean end (SPEC: the final event was sent).
					t.Fatal("a clean end without message_stop or a stop_reason")
				}
				return
			case !errors.Is(err, providers.ErrStreamIncomplete):
				t.Fatalf("unexpected error: %v", err)
			}
			return
		}
		t.Fatal("the stream did not end")
	})
}

// FuzzEventStream is FuzzChatStream for the native stream: io.EOF only right
// after a message_stop event.
func FuzzEventStream(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &eventStream{c: &Client{name: "fuzz"}, conn: fuzzConn(data)}
		defer s.Close()
		if err := s.readFirst(); err != nil {
			var pe *providers.Error
			if !errors.As(err, &pe) {
				t.Fatalf("before the first content: %T %v", err, err)
			}
			return
		}
		last := ""
		for i := 0; i <= len(data)+4; i++ {
			ev, err := s.Next()
			switch {
			case err == nil:
				last = ev.Type
				continue
			case errors.Is(err, io.EOF):
				if last != anthropicjson.EventMessageStop {
					t.Fatalf("a clean end after %q, not message_stop", last)
				}
				return
			case !errors.Is(err, providers.ErrStreamIncomplete):
				t.Fatalf("unexpected error: %v", err)
			}
			return
		}
		t.Fatal("the stream did not end")
	})
}
