package e2e

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/fakeupstream"
)

// sameButNulls compares a client-side JSON value with the upstream's: equal,
// except that members the upstream sent as null may be absent (the documented
// normalisation: OpenAI's "absent" nulls are left out).
func sameButNulls(t *testing.T, want, got any, path string) {
	t.Helper()
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		require.True(t, ok, "%s: want an object, got %v", path, got)
		for k, wv := range w {
			gv, present := g[k]
			if wv == nil && !present {
				continue
			}
			require.True(t, present, "%s.%s is missing", path, k)
			sameButNulls(t, wv, gv, path+"."+k)
		}
		for k := range g {
			_, ok := w[k]
			require.True(t, ok, "%s.%s was added", path, k)
		}
	case []any:
		g, ok := got.([]any)
		require.True(t, ok, "%s: want an array, got %v", path, got)
		require.Len(t, g, len(w), path)
		for i := range w {
			sameButNulls(t, w[i], g[i], path)
		}
	default:
		require.Equal(t, want, got, path)
	}
}

// TestReplayCorpus passes realistic provider traffic through Switchyard: every
// member reaches the client unchanged (unknown ones included: obfuscation, x_groq,
// reasoning_content, usage timing), apart from the documented normalisations.
func TestReplayCorpus(t *testing.T) {
	t.Parallel()
	g := start(t, "")
	for _, file := range []string{"chat_completion_stream.txt", "openai_tool_call_stream.txt",
		"groq_chat_completion_stream.txt", "xai_chat_completion_stream.txt"} {
		lines := readLines(t, "../internal/fakeupstream/testdata/"+file)
		g.up.Script(fakeupstream.Reply{Events: lines})
		resp := post(t, g.base+"/chat/completions", chatBody+`,"stream":true,"stream_options":{"include_usage":true}}`)
		require.Equal(t, 200, resp.StatusCode, file)
		events := sseEvents(t, resp)
		require.Len(t, events, len(lines), file)
		for i := range lines {
			if lines[i] == "[DONE]" {
				require.Equal(t, "[DONE]", events[i], file)
				continue
			}
			var want, got any
			require.NoError(t, json.Unmarshal([]byte(lines[i]), &want))
			require.NoError(t, json.Unmarshal([]byte(events[i]), &got), events[i])
			sameButNulls(t, want, got, file)
		}
	}
	for _, file := range []string{"chat_completion.json", "chat_with_tools.json", "groq_chat_with_tools.json"} {
		body, err := os.ReadFile("../internal/fakeupstream/testdata/" + file)
		require.NoError(t, err)
		g.up.Script(fakeupstream.Reply{Body: string(body)})
		resp := post(t, g.base+"/chat/completions", chatBody+`}`)
		require.Equal(t, 200, resp.StatusCode, file)
		var want, got any
		require.NoError(t, json.Unmarshal(body, &want))
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
		sameButNulls(t, want, got, strings.TrimSuffix(file, ".json"))
	}
}

// TestStreamPassThrough: chunks that need no change reach REST clients byte for
// byte; chunks missing members OpenAI always sends are normalised; usage the
// client did not ask for is withheld either way.
func TestStreamPassThrough(t *testing.T) {
	t.Parallel()
	g := start(t, "")
	lines := readLines(t, "../internal/fakeupstream/testdata/chat_completion_stream.txt")
	g.up.Script(fakeupstream.Reply{Events: lines})
	events := sseEvents(t, post(t, g.base+"/chat/completions", chatBody+`,"stream":true}`))
	require.Equal(t, lines, events, "relayed as sent")

	bare := `{"id":"x","created":1,"choices":[{"index":0,"delta":{"content":"hi"}}]}`
	last := `{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	g.up.Script(fakeupstream.Reply{Events: []string{bare, last, "[DONE]"}})
	events = sseEvents(t, post(t, g.base+"/chat/completions", chatBody+`,"stream":true}`))
	require.Len(t, events, 3)
	var first, second map[string]any
	require.NoError(t, json.Unmarshal([]byte(events[0]), &first))
	require.Equal(t, "chat.completion.chunk", first["object"], "a missing object is filled in")
	require.Equal(t, "gpt-4o", first["model"], "a missing model is the target's")
	require.NoError(t, json.Unmarshal([]byte(events[1]), &second))
	require.NotContains(t, second, "usage", "usage the client did not ask for is withheld")
	require.Equal(t, "[DONE]", events[2])
}
