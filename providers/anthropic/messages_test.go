package anthropic_test

import (
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/fakeupstream"
	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/providers/anthropic"
)

// TestMessagesNative: a /v1/messages body reaches Anthropic with only its model
// rewritten (members Switchyard does not know, cache_control, key order and
// spacing kept), and the answer comes back byte for byte.
func TestMessagesNative(t *testing.T) {
	t.Parallel()
	up := newFake(t)
	c := newClient(t, up)
	answer := recording(t, "messages_extended_thinking.json")
	up.Script(fakeupstream.Reply{Body: answer})
	body := `{"max_tokens": 1024, "model": "claude/claude-sonnet-4", "thinking": {"type":"enabled","budget_tokens":512},` +
		` "messages":[{"role":"user","content":[{"type":"text","text":"x + 5 = 12","cache_control":{"type":"ephemeral"}}]}], "novel_member": [1,2]}`
	got, err := c.Messages(ctx, providers.Attempt{Model: "claude-sonnet-4-20250514"}, []byte(body))
	require.NoError(t, err)
	require.Equal(t, answer, string(got))
	sent := string(up.Requests()[0].Body)
	require.Equal(t, strings.Replace(body, `"claude/claude-sonnet-4"`, `"claude-sonnet-4-20250514"`, 1), sent)
}

// TestMessagesNotAnObject: a body that is no JSON object is the client's 400, not sent.
func TestMessagesNotAnObject(t *testing.T) {
	t.Parallel()
	up := newFake(t)
	c := newClient(t, up)
	_, err := c.Messages(ctx, providers.Attempt{Model: "m"}, []byte(`[1]`))
	require.Equal(t, 400, providerError(t, err).Status)
	require.Zero(t, up.Count())
}

// TestStreamMessagesRecording: the recorded stream's events come through as the
// upstream framed them, type and data, pings included; io.EOF after message_stop.
func TestStreamMessagesRecording(t *testing.T) {
	t.Parallel()
	frames := fakeupstream.AnthropicRecordedStream(recording(t, "messages_stream.txt"))
	cases := []struct {
		name  string
		reply fakeupstream.Reply
	}{
		{"event by event", fakeupstream.Reply{Events: frames}},
		{"in one write", fakeupstream.Reply{Events: frames, Burst: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up := newFake(t)
			c := newClient(t, up)
			up.Script(tc.reply)
			s, err := c.StreamMessages(ctx, providers.Attempt{Model: "claude-sonnet-4-20250514"},
				[]byte(`{"model":"x","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
			require.NoError(t, err)
			defer s.Close()
			evs, err := readEvents(t, s)
			require.ErrorIs(t, err, io.EOF)
			require.Len(t, evs, len(frames))
			for i, f := range frames {
				typ, data, _ := strings.Cut(f, "\n")
				require.Equal(t, strings.TrimPrefix(typ, "event: "), evs[i].Type, i)
				require.Equal(t, strings.TrimPrefix(data, "data: "), string(evs[i].Data), i)
			}
			_, err = s.Next()
			require.ErrorIs(t, err, io.EOF, "nothing after the end")
		})
	}
}

// TestStreamMessagesWithoutEventField: an event sent with data only gets its type
// from the data, as the surface relays it under "event:".
func TestStreamMessagesWithoutEventField(t *testing.T) {
	t.Parallel()
	up := newFake(t)
	c := newClient(t, up)
	var frames []string
	for _, f := range fakeupstream.AnthropicStream("msg", "m", "hi") {
		_, data, _ := strings.Cut(f, "\n")
		frames = append(frames, data)
	}
	up.Script(fakeupstream.Reply{Events: frames})
	s, err := c.StreamMessages(ctx, providers.Attempt{Model: "m"}, []byte(`{"model":"x","stream":true}`))
	require.NoError(t, err)
	defer s.Close()
	evs, err := readEvents(t, s)
	require.ErrorIs(t, err, io.EOF)
	require.Equal(t, "message_start", evs[0].Type)
	require.Equal(t, "message_stop", evs[len(evs)-1].Type)
}

// TestCountTokens: count_tokens is sent as it came (model rewritten) and its answer returned.
func TestCountTokens(t *testing.T) {
	t.Parallel()
	up := newFake(t)
	c := newClient(t, up)
	got, err := c.CountTokens(ctx, providers.Attempt{Model: "claude-sonnet-4-20250514", RequestID: "r1"},
		[]byte(`{"model":"x","messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"input_tokens":14}`, string(got))
	r := up.Requests()[0]
	require.Equal(t, "/v1/messages/count_tokens", r.Path)
	require.Equal(t, `{"model":"claude-sonnet-4-20250514","messages":[{"role":"user","content":"hi"}]}`, string(r.Body))
	require.Equal(t, key, r.Header.Get("X-Api-Key"))
}

// TestModels: GET /v1/models, every page followed (after_id = the last id).
func TestModels(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		page int
	}{{"one page", 0}, {"a model a page", 1}, {"two a page", 2}}
	models := []string{"claude-opus-4-1", "claude-sonnet-4-20250514", "claude-3-5-haiku-20241022"}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up := fakeupstream.NewAnthropic(models...)
			t.Cleanup(up.Close)
			up.SetModelsPage(tc.page)
			c := newClient(t, up)
			got, err := c.Models(ctx)
			require.NoError(t, err)
			require.Equal(t, models, got)
		})
	}
	t.Run("error", func(t *testing.T) {
		t.Parallel()
		up := newFake(t)
		up.FailModels(529)
		c := newClient(t, up)
		_, err := c.Models(ctx)
		pe := providerError(t, err)
		require.Equal(t, 529, pe.Status)
		require.Equal(t, "overloaded_error", pe.Code)
	})
}

// TestProviderInterfaces: the client is a Provider, a Messenger and a TokenCounter.
func TestProviderInterfaces(t *testing.T) {
	up := newFake(t)
	var p providers.Provider = newClient(t, up)
	_, ok := p.(providers.Messenger)
	require.True(t, ok)
	_, ok = p.(providers.TokenCounter)
	require.True(t, ok)
	require.Equal(t, "claude", p.Name())
}

// TestBaseURLWithV1: a base_url written with /v1 (or a trailing slash) reaches
// the same paths.
func TestBaseURLWithV1(t *testing.T) {
	t.Parallel()
	for _, suffix := range []string{"", "/", "/v1", "/v1/"} {
		up := newFake(t)
		c := anthropic.New(anthropic.Config{Name: "claude", BaseURL: up.URL + suffix, APIKey: key})
		_, err := c.Chat(ctx, chatRequest())
		c.Close()
		require.NoError(t, err, suffix)
		require.Equal(t, "/v1/messages", up.Requests()[0].Path, suffix)
	}
}

// TestANativeAnswerMustBeWhatItsEndpointAnswers: a 200 relayed as it came is
// still checked for its shape, a message or a token count: valid JSON that is
// neither is the upstream's unreadable answer (502), never the client's success.
func TestANativeAnswerMustBeWhatItsEndpointAnswers(t *testing.T) {
	t.Parallel()
	message := `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":0}}`
	cases := []struct {
		name, answer string
		count, ok    bool
	}{
		{"a message", message, false, true},
		{"an object that is no message", `{"foo":1}`, false, false},
		{"an empty object", `{}`, false, false},
		{"a list", `[]`, false, false},
		{"a number", `123`, false, false},
		{"a string", `"x"`, false, false},
		{"a message without content", `{"type":"message","role":"assistant"}`, false, false},
		{"a message with null content", `{"type":"message","content":null}`, false, false},
		{"a message with text for content", `{"type":"message","content":"hi"}`, false, false},
		{"a token count", `{"input_tokens":12}`, true, true},
		{"a token count of a message", message, true, false},
		{"a token count as a string", `{"input_tokens":"12"}`, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up := newFake(t)
			c := newClient(t, up)
			up.Script(fakeupstream.Reply{Body: tc.answer})
			call := c.Messages
			if tc.count {
				call = c.CountTokens
			}
			got, err := call(ctx, providers.Attempt{Model: "m"}, []byte(`{"model":"m","max_tokens":1,"messages":[]}`))
			if tc.ok {
				require.NoError(t, err)
				require.Equal(t, tc.answer, string(got))
				return
			}
			pe := providerError(t, err)
			require.Equal(t, 502, pe.Status)
			require.Equal(t, "upstream_unreadable", pe.Code)
		})
	}
}
