package openai

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/providers"
)

// An HTTPS upstream that offers HTTP/2 is still spoken to in HTTP/1.1 (the load
// harness measured HTTP/2 dearer per request).
func TestHTTPSUpstreamsGetHTTP11(t *testing.T) {
	var proto atomic.Value
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proto.Store(r.Proto)
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"c","object":"chat.completion","created":1,"model":"gpt-4o",`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`)
	}))
	up.EnableHTTP2 = true
	up.StartTLS()
	defer up.Close()
	require.True(t, up.TLS.NextProtos[0] == "h2", "the fake upstream offers HTTP/2")

	c := New(Config{Name: "up", BaseURL: up.URL, APIKey: "sk"})
	defer c.Close()
	c.http.Transport.(*http.Transport).TLSClientConfig = up.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	resp, err := c.Chat(context.Background(), &providers.Request{Attempt: providers.Attempt{Model: "gpt-4o"}, Body: &pb.ChatCompletionRequest{Model: "up/gpt-4o"}})
	require.NoError(t, err)
	require.Equal(t, "hi", resp.GetChoices()[0].GetMessage().GetContent().GetStringValue())
	require.Equal(t, "HTTP/1.1", proto.Load())

	// The same upstream does speak HTTP/2 to a client that asks for it.
	r, err := up.Client().Get(up.URL)
	require.NoError(t, err)
	r.Body.Close()
	require.Equal(t, "HTTP/2.0", proto.Load())
}
