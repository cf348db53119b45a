package fakeupstream_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/fakeupstream"
)

func post(t *testing.T, url, body string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Post(url+"/v1/messages", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

// TestAnthropicStreamFraming: every event is framed exactly as Anthropic frames
// it, "event: TYPE\ndata: JSON\n\n", its data's type the event's type, in the order
// Anthropic sends them.
func TestAnthropicStreamFraming(t *testing.T) {
	up := fakeupstream.NewAnthropic()
	defer up.Close()
	resp, body := post(t, up.URL, `{"model":"claude-x","max_tokens":5,"stream":true,"messages":[]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	require.True(t, strings.HasSuffix(body, "\n\n"))
	var types []string
	for _, frame := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		lines := strings.Split(frame, "\n")
		require.Len(t, lines, 2, frame)
		typ, ok := strings.CutPrefix(lines[0], "event: ")
		require.True(t, ok, frame)
		data, ok := strings.CutPrefix(lines[1], "data: ")
		require.True(t, ok, frame)
		var head struct {
			Type string `json:"type"`
		}
		require.NoError(t, json.Unmarshal([]byte(data), &head), frame)
		require.Equal(t, typ, head.Type)
		types = append(types, typ)
	}
	require.Equal(t, []string{"message_start", "content_block_start", "ping", "content_block_delta", "content_block_delta",
		"content_block_delta", "content_block_delta", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}, types)
	require.Contains(t, body, `"model":"claude-x"`)
}

// TestAnthropicErrorBody: an error status answers Anthropic's error body with the
// type Anthropic gives the status, and the scripted headers.
func TestAnthropicErrorBody(t *testing.T) {
	up := fakeupstream.NewAnthropic()
	defer up.Close()
	up.Script(fakeupstream.Reply{Status: 529, Header: map[string]string{"retry-after": "3"}})
	resp, body := post(t, up.URL, `{"model":"m"}`)
	require.Equal(t, 529, resp.StatusCode)
	require.Equal(t, "3", resp.Header.Get("Retry-After"))
	require.JSONEq(t, `{"type":"error","error":{"type":"overloaded_error","message":"fake upstream error 529"}}`, body)
	require.Equal(t, 1, up.Count())
	require.Equal(t, "/v1/messages", up.Requests()[0].Path)
}
