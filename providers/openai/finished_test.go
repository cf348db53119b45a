package openai_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/fakeupstream"
	"github.com/switchyard/switchyard/providers"
)

// TestAStreamPastItsFinishChunkStaysComplete: once every choice carried its
// finish_reason the answer is whole (SPEC: a stream that sent its final event
// stays complete even if the connection fails afterwards): a reset, a stall
// waiting for [DONE] or the usage chunk, an error event or a cut event after
// it end the stream cleanly, never as stream_incomplete.
func TestAStreamPastItsFinishChunkStaysComplete(t *testing.T) {
	t.Parallel()
	head := `{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":`
	chunks := []string{head + `"a"}}]}`, head + `"b"},"finish_reason":"stop"}]}`}
	after := func(evs ...string) []string { return append(append([]string{}, chunks...), evs...) }
	for _, tc := range []struct {
		name  string
		reply fakeupstream.Reply
	}{
		{"reset before [DONE]", fakeupstream.Reply{Events: after("[DONE]"), CutAfter: 2}},
		{"stall before [DONE]", fakeupstream.Reply{Events: after("[DONE]"), StallAfter: 2, Stall: 2 * time.Second}},
		{"an error event after it", fakeupstream.Reply{Events: after(`{"error":{"message":"Internal error","type":"server_error"}}`, "[DONE]")}},
		{"an unreadable event after it", fakeupstream.Reply{Events: after(`{"id":`)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up := fakeupstream.New()
			t.Cleanup(up.Close)
			c := newClient(t, up, 100*time.Millisecond)
			up.Script(tc.reply)
			s, err := c.Stream(context.Background(), request())
			require.NoError(t, err)
			defer s.Close()
			text, err := collect(t, s)
			require.NoError(t, err, "the answer was whole")
			require.Equal(t, "ab", text)
		})
	}
	t.Run("a reset before it is still incomplete", func(t *testing.T) {
		t.Parallel()
		up := fakeupstream.New()
		t.Cleanup(up.Close)
		c := newClient(t, up, 0)
		up.Script(fakeupstream.Reply{Events: append(chunks[:1:1], "[DONE]"), CutAfter: 1})
		s, err := c.Stream(context.Background(), request())
		require.NoError(t, err)
		defer s.Close()
		_, err = collect(t, s)
		require.ErrorIs(t, err, providers.ErrStreamIncomplete)
	})
}
