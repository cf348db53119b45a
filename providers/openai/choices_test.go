package openai_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
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

// choicesEvent is a complete chunk with several choices, each "index:finish"
// (finish empty for none).
func choicesEvent(choices ...string) string {
	var parts []string
	for _, c := range choices {
		index, finish, _ := strings.Cut(c, ":")
		f := "null"
		if finish != "" {
			f = fmt.Sprintf("%q", finish)
		}
		parts = append(parts, fmt.Sprintf(`{"index":%s,"delta":{"content":"x"},"finish_reason":%s}`, index, f))
	}
	return `{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[` + strings.Join(parts, ",") + `]}`
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
		// n=1, but the upstream sends other indexes: each one it sent must finish too,
		// and a finish on another index does not finish choice 0.
		{"n=1, one chunk: 0 open, 1 finishes, then DONE", 1, []string{choiceEvent(0, "a", ""),
			choicesEvent("0:", "1:stop"), "[DONE]"}, false},
		{"n=1, first chunk: 0 open, 1 finishes, then DONE", 1, []string{choicesEvent("0:", "1:stop"), "[DONE]"}, false},
		{"n=1, lone index 1 finishes, 0 never does", 1, []string{choiceEvent(0, "a", ""),
			choiceEvent(1, "", "stop"), "[DONE]"}, false},
		{"n=1, only index 1, finishing", 1, []string{choiceEvent(1, "a", ""), choiceEvent(1, "", "stop"), "[DONE]"}, false},
		{"n=1, index 1 sent, never finishes, 0 does", 1, []string{choiceEvent(0, "a", ""), choiceEvent(1, "b", ""),
			choiceEvent(0, "", "stop"), "[DONE]"}, false},
		{"n=1, index 1 sent, never finishes, 0 does, closed", 1, []string{choiceEvent(0, "a", ""), choiceEvent(1, "b", ""),
			choiceEvent(0, "", "stop")}, false},
		{"n=1, index 1 then 0 finish alone", 1, []string{choiceEvent(0, "a", ""), choiceEvent(1, "b", ""),
			choiceEvent(1, "", "stop"), choiceEvent(0, "", "stop"), "[DONE]"}, true},
		{"n=1, 0 and 1 finish in one chunk", 1, []string{choiceEvent(0, "a", ""),
			choicesEvent("0:stop", "1:length"), "[DONE]"}, true},
		{"n=1, 0 finishes, then 1 in a chunk with 0", 1, []string{choiceEvent(0, "a", ""), choiceEvent(0, "", "stop"),
			choicesEvent("0:", "1:stop"), "[DONE]"}, true},
		{"n=1, 0 finishes, then 1 opens with 0", 1, []string{choiceEvent(0, "a", ""), choiceEvent(0, "", "stop"),
			choicesEvent("0:", "1:"), "[DONE]"}, false},
		{"n=2, 0 and 1 in one chunk, only 1 finishes", 2, []string{choiceEvent(0, "a", ""),
			choicesEvent("0:", "1:stop"), "[DONE]"}, false},
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
