package openai_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/providers/openai"
)

// TestAStreamAnsweredWithJSON: a stream request answered 200 with a JSON body,
// not events, is read as Chat reads a 200 body: an error hidden in it keeps its
// status (a 429 stays retryable and failover-eligible), anything else is a 502
// naming what was wrong. It was a transport failure, "unreachable: unexpected
// EOF", whatever the body said.
func TestAStreamAnsweredWithJSON(t *testing.T) {
	t.Parallel()
	completion := `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"a"},"finish_reason":"stop"}]}`
	cases := []struct {
		name, contentType, body string
		status                  int
		kind                    string
		message                 string
	}{
		{"a hidden 429", "application/json", `{"error":{"code":"429","message":"rate limited"}}`, 429, providers.KindHiddenError, "rate limited"},
		{"a hidden 429 with a charset, on one line", "application/json; charset=utf-8", `{"error":{"code":429,"message":"rate limited"}}` + "\n", 429, providers.KindHiddenError, "rate limited"},
		{"a hidden error without a status", "application/json", `{"error":{"message":"boom","code":"internal"}}`, 502, providers.KindHiddenError, "boom"},
		{"a completion", "application/json", completion, 502, providers.KindUnreadable, "provider up answered JSON to a stream request: Content-Type application/json, not text/event-stream"},
		{"an array", "Application/JSON", `  [1]`, 502, providers.KindUnreadable, "provider up answered JSON to a stream request: Content-Type application/json, not text/event-stream"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", tc.contentType)
				_, _ = io.WriteString(w, tc.body)
			}))
			defer up.Close()
			c := openai.New(openai.Config{Name: "up", BaseURL: up.URL, APIKey: "sk", ConnectTimeout: time.Second, Timeout: 5 * time.Second})
			defer c.Close()
			s, err := c.Stream(context.Background(), request())
			require.Nil(t, s)
			pe := providerError(t, err)
			require.Equal(t, tc.status, pe.Status)
			require.Equal(t, tc.status, pe.UpstreamStatus(), "what retries, breakers and failover see")
			require.Equal(t, tc.kind, pe.Kind)
			require.False(t, pe.Transport, "the upstream answered: not a transport failure")
			require.Equal(t, tc.message, pe.Message)
		})
	}
}

// TestAnEventStreamLabelledJSONIsReadAsEvents: a body labelled JSON that does not
// begin with an object is read as the events it is (some servers label their
// streams so).
func TestAnEventStreamLabelledJSONIsReadAsEvents(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "\n"+`data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	defer up.Close()
	c := openai.New(openai.Config{Name: "up", BaseURL: up.URL, APIKey: "sk", ConnectTimeout: time.Second, Timeout: 5 * time.Second})
	defer c.Close()
	s, err := c.Stream(context.Background(), request())
	require.NoError(t, err)
	defer s.Close()
	ch, err := s.Recv()
	require.NoError(t, err)
	require.Equal(t, "hi", ch.GetChoices()[0].GetDelta().GetContent())
	_, err = s.Recv()
	require.ErrorIs(t, err, io.EOF)
}
