package anthropic_test

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/anthropicjson"
	"github.com/switchyard/switchyard/internal/fakeupstream"
	"github.com/switchyard/switchyard/providers"
)

// TestStreamRecording replays the recorded stream (pings, padded JSON and all)
// and checks every translated chunk.
func TestStreamRecording(t *testing.T) {
	t.Parallel()
	for _, usage := range []bool{false, true} {
		t.Run(map[bool]string{false: "without usage", true: "with usage"}[usage], func(t *testing.T) {
			t.Parallel()
			up := newFake(t)
			c := newClient(t, up)
			up.Script(fakeupstream.Reply{Events: fakeupstream.AnthropicRecordedStream(recording(t, "messages_stream.txt"))})
			req := chatRequest()
			req.IncludeUsage = usage
			s, err := c.Stream(ctx, req)
			require.NoError(t, err)
			defer s.Close()
			chunks, err := readAll(t, s)
			require.ErrorIs(t, err, io.EOF)
			want := 3
			if usage {
				want = 4
			}
			require.Len(t, chunks, want)
			for _, ch := range chunks {
				require.Equal(t, "msg_01SJmPi7XXP8qscFQiHPR9oy", ch.Id)
				require.Equal(t, "chat.completion.chunk", ch.Object)
				require.Equal(t, "claude-sonnet-4-20250514", ch.Model)
				require.Equal(t, chunks[0].Created, ch.Created)
			}
			role := chunks[0].Choices[0]
			require.Equal(t, "assistant", role.Delta.GetRole())
			require.Equal(t, "", role.Delta.GetContent())
			require.Empty(t, role.GetFinishReason())
			text := chunks[1].Choices[0]
			require.Equal(t, "Hello World", text.Delta.GetContent())
			require.Empty(t, text.GetFinishReason())
			require.Equal(t, "stop", chunks[2].Choices[0].GetFinishReason())
			if usage {
				u := chunks[3]
				require.Empty(t, u.Choices)
				require.Equal(t, int32(10), u.Usage.PromptTokens)
				require.Equal(t, int32(5), u.Usage.CompletionTokens)
				require.Equal(t, int32(15), u.Usage.TotalTokens)
			}
		})
	}
}

// TestStreamToolUseAndThinking: a tool_use block streams as one tool call (id,
// name, then argument pieces), thinking as reasoning_content.
func TestStreamToolUseAndThinking(t *testing.T) {
	t.Parallel()
	t.Run("tool use", func(t *testing.T) {
		t.Parallel()
		up := newFake(t)
		c := newClient(t, up)
		up.Script(fakeupstream.Reply{Events: fakeupstream.AnthropicToolStream("msg_t", "claude-sonnet-4-20250514", "Checking.",
			"toolu_1", "get_weather", `{"location":"Paris"}`)})
		s, err := c.Stream(ctx, chatRequest())
		require.NoError(t, err)
		defer s.Close()
		chunks, err := readAll(t, s)
		require.ErrorIs(t, err, io.EOF)
		var text, args, id, name, finish string
		for _, ch := range chunks {
			for _, choice := range ch.Choices {
				text += choice.Delta.GetContent()
				for _, tc := range choice.Delta.ToolCalls {
					require.Equal(t, int32(0), tc.GetIndex())
					if tc.GetId() != "" {
						id, name = tc.GetId(), tc.Function.GetName()
						require.Equal(t, "function", tc.GetType())
					}
					args += tc.Function.GetArguments()
				}
				if choice.GetFinishReason() != "" {
					finish = choice.GetFinishReason()
				}
			}
		}
		require.Equal(t, "Checking.", text)
		require.Equal(t, "toolu_1", id)
		require.Equal(t, "get_weather", name)
		require.JSONEq(t, `{"location":"Paris"}`, args)
		require.Equal(t, "tool_calls", finish)
	})
	t.Run("thinking", func(t *testing.T) {
		t.Parallel()
		up := newFake(t)
		c := newClient(t, up)
		up.Script(fakeupstream.Reply{Events: fakeupstream.AnthropicThinkingStream("msg_th", "claude-sonnet-4-20250514", "x = 7", "sig123", "x is 7")})
		s, err := c.Stream(ctx, chatRequest())
		require.NoError(t, err)
		defer s.Close()
		chunks, err := readAll(t, s)
		require.ErrorIs(t, err, io.EOF)
		var reasoning, text string
		for _, ch := range chunks {
			for _, choice := range ch.Choices {
				reasoning += choice.Delta.GetExtra().GetFields()["reasoning_content"].GetStringValue()
				text += choice.Delta.GetContent()
			}
		}
		require.Equal(t, "x = 7", reasoning)
		require.Equal(t, "x is 7", text)
	})
}

// TestStreamFaults: every way an Anthropic stream can go wrong, before its first
// content (a plain error with a status: retried, failed over) and after it (the
// stream ends with an error wrapping providers.ErrStreamIncomplete, never io.EOF).
func TestStreamFaults(t *testing.T) {
	t.Parallel()
	const model = "claude-sonnet-4-20250514"
	full := fakeupstream.AnthropicStream("msg_f", model, "one two three")
	// full: 0 message_start, 1 block start, 2 ping, 3-5 deltas, 6 block stop, 7 message_delta, 8 message_stop
	const cut = "cut"
	overloaded := fakeupstream.AnthropicErrorEvent("overloaded_error", "Overloaded")
	cases := []struct {
		name  string
		reply fakeupstream.Reply
		// before the first content: the error's status and code, or 0
		status int
		code   string
		// after it: the StreamError kind
		kind string
		// the stream is complete: the fault came after message_delta's
		// stop_reason, the answer is whole (SPEC): translated to chat it ends
		// after the finish chunk, natively with Switchyard's message_stop
		complete bool
	}{
		{"error event before content", fakeupstream.Reply{Events: append(append([]string{}, full[:2]...), overloaded)}, 529, "overloaded_error", "", false},
		{"error event first", fakeupstream.Reply{Events: []string{overloaded}}, 529, "overloaded_error", "", false},
		{"error event after content", fakeupstream.Reply{Events: append(append([]string{}, full[:4]...), overloaded)}, 0, "", providers.StreamErrorEvent, false},
		{"cut before message_stop", fakeupstream.Reply{Events: full, CutAfter: 8}, 0, "", cut, true},
		{"ends cleanly without message_stop", fakeupstream.Reply{Events: full[:8]}, 0, "", providers.StreamClosedEarly, true},
		{"error event after message_delta", fakeupstream.Reply{Events: append(append([]string{}, full[:8]...), overloaded)}, 0, "", providers.StreamErrorEvent, true},
		{"cut before message_delta", fakeupstream.Reply{Events: full, CutAfter: 7}, 0, "", cut, false},
		{"cut before content", fakeupstream.Reply{Events: full, CutAfter: 2}, 502, "", "", false},
		{"ends before content", fakeupstream.Reply{Events: full[:3]}, 502, "empty_response", "", false},
		{"malformed event after content", fakeupstream.Reply{Events: append(append([]string{}, full[:4]...), "event: content_block_delta\ndata: {not json")},
			0, "", providers.StreamMalformedChunk, false},
		{"malformed event first", fakeupstream.Reply{Events: []string{"event: message_start\ndata: [1]"}}, 502, "upstream_unreadable", "", false},
		{"error status", fakeupstream.Reply{Status: 529, Header: map[string]string{"retry-after": "3"}}, 529, "overloaded_error", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, native := range []bool{false, true} {
				up := newFake(t)
				c := newClient(t, up)
				up.Script(tc.reply)
				var err error
				var got int
				var last providers.Event
				if native {
					var s providers.EventStream
					s, err = c.StreamMessages(ctx, providers.Attempt{Model: model}, []byte(`{"model":"x","max_tokens":5,"stream":true,"messages":[]}`))
					if err == nil {
						var evs []providers.Event
						evs, err = readEvents(t, s)
						got = len(evs)
						if got > 0 {
							last = evs[got-1]
						}
						s.Close()
					}
				} else {
					var s providers.Stream
					s, err = c.Stream(ctx, chatRequest())
					if err == nil {
						var chunks []any
						for {
							ch, e := s.Recv()
							if e != nil {
								err = e
								break
							}
							chunks = append(chunks, ch)
						}
						got = len(chunks)
						s.Close()
					}
				}
				if tc.complete {
					require.ErrorIs(t, err, io.EOF, "native=%v: after the stop_reason the stream is complete", native)
					if native {
						require.Equal(t, 9, got, "the upstream's eight events and Switchyard's message_stop")
						require.Equal(t, anthropicjson.EventMessageStop, last.Type)
						require.JSONEq(t, `{"type":"message_stop"}`, string(last.Data))
					} else {
						require.Equal(t, 5, got, "role, three deltas, the finish chunk (the usage chunk comes with message_stop)")
					}
					continue
				}
				require.NotErrorIs(t, err, io.EOF, "native=%v: an incomplete stream never ends cleanly", native)
				if tc.status != 0 {
					pe := providerError(t, err)
					require.Equal(t, tc.status, pe.Status, "native=%v %v", native, err)
					require.Equal(t, tc.code, pe.Code, "native=%v", native)
					require.NotErrorIs(t, err, providers.ErrStreamIncomplete, "before the first content it is a plain error")
					continue
				}
				require.NotZero(t, got, "the content before the fault was delivered")
				require.ErrorIs(t, err, providers.ErrStreamIncomplete, "native=%v: %v", native, err)
				var se *providers.StreamError
				require.ErrorAs(t, err, &se)
				if tc.kind == cut { // a reset reads as a failed read or as the end, as the kernel has it
					require.Contains(t, []string{providers.StreamClosedEarly, providers.StreamReadError}, se.Kind)
				} else {
					require.Equal(t, tc.kind, se.Kind, "native=%v", native)
				}
				if tc.kind == providers.StreamErrorEvent {
					require.Contains(t, err.Error(), "Overloaded")
				}
				if native && tc.kind == providers.StreamErrorEvent {
					pe := providerError(t, err)
					require.Equal(t, 529, pe.Status, "the native surface sees the error Anthropic reported")
					require.Equal(t, "overloaded_error", pe.Code)
				}
			}
		})
	}
}
