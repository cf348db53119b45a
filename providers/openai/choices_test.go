package openai_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/fakeupstream"
	"github.com/switchyard/switchyard/providers"
)

// choiceEvent is a complete chunk (relayable as is) for choice index.
func choiceEvent(index int, content, finish string) string {
	f := "null"
	if finish != "" {
		f = fmt.Sprintf("%q", finish)
	}
	return fmt.Sprintf(`{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":%d,"delta":{"content":%q},"finish_reason":%s}]}`,
		index, content, f)
}

// drainStream reads s by Recv or NextRaw and returns what ended it.
func drainStream(s providers.Stream, raw bool) error {
	defer s.Close()
	for {
		var err error
		if raw {
			_, err = s.(providers.RawStream).NextRaw()
		} else {
			_, err = s.Recv()
		}
		if err != nil {
			return err
		}
	}
}

// TestStreamWithSeveralChoicesNeedsEveryFinish: with n > 1 a stream is complete
// only when every choice has carried a finish_reason; one finished choice is not
// enough, whether the stream then closes or sends [DONE].
func TestStreamWithSeveralChoicesNeedsEveryFinish(t *testing.T) {
	t.Parallel()
	up := fakeupstream.New()
	defer up.Close()
	c := newClient(t, up, 0)
	cases := []struct {
		name     string
		n        int32
		events   []string
		complete bool
	}{
		{"n=2, both finish", 2, []string{choiceEvent(0, "a", ""), choiceEvent(1, "b", ""),
			choiceEvent(0, "", "stop"), choiceEvent(1, "", "stop"), "[DONE]"}, true},
		{"n=2, one finish then DONE", 2, []string{choiceEvent(0, "a", ""), choiceEvent(1, "b", ""),
			choiceEvent(0, "", "stop"), "[DONE]"}, false},
		{"n=2, one finish then closed", 2, []string{choiceEvent(0, "a", ""), choiceEvent(1, "b", ""),
			choiceEvent(0, "", "stop")}, false},
		{"n=2, choices one after the other, cut after the first", 2, []string{choiceEvent(0, "a", ""),
			choiceEvent(0, "", "stop")}, false},
		{"n=2, both finish in one chunk", 2, []string{choiceEvent(0, "a", ""), choiceEvent(1, "b", ""),
			`{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"},{"index":1,"delta":{},"finish_reason":"length"}]}`,
			"[DONE]"}, true},
		{"n=1 finishes with its one choice", 1, []string{choiceEvent(0, "a", ""), choiceEvent(0, "", "stop"), "[DONE]"}, true},
	}
	for _, tc := range cases {
		for _, raw := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/raw=%v", tc.name, raw), func(t *testing.T) {
				up.Script(fakeupstream.Reply{Events: tc.events})
				req := request()
				req.Body.N = &tc.n
				s, err := c.Stream(context.Background(), req)
				require.NoError(t, err)
				err = drainStream(s, raw)
				if tc.complete {
					require.ErrorIs(t, err, io.EOF)
					return
				}
				require.ErrorIs(t, err, providers.ErrStreamIncomplete)
				var se *providers.StreamError
				require.True(t, errors.As(err, &se))
				require.Contains(t, []string{providers.StreamNoFinishReason, providers.StreamClosedEarly}, se.Kind)
			})
		}
	}
}
