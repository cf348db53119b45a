package anthropic_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/fakeupstream"
	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/providers/anthropic"
)

// Streams run timers and the HTTP transport runs connection goroutines: none may
// outlive the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const key = "sk-ant-test-key-0123456789"

func newClient(t *testing.T, up *fakeupstream.Anthropic, edit ...func(*anthropic.Config)) *anthropic.Client {
	t.Helper()
	cfg := anthropic.Config{Name: "claude", BaseURL: up.URL, APIKey: key, ConnectTimeout: time.Second, Timeout: 5 * time.Second}
	for _, e := range edit {
		e(&cfg)
	}
	c := anthropic.New(cfg)
	t.Cleanup(c.Close)
	return c
}

func newFake(t *testing.T) *fakeupstream.Anthropic {
	t.Helper()
	up := fakeupstream.NewAnthropic()
	t.Cleanup(up.Close)
	return up
}

func chatRequest() *providers.Request {
	return &providers.Request{Attempt: providers.Attempt{Model: "claude-sonnet-4-20250514"},
		Body: &pb.ChatCompletionRequest{Model: "claude/claude-sonnet-4-20250514",
			Messages: []*pb.ChatMessage{{Role: "user", Content: structpb.NewStringValue("hi")}}}}
}

func providerError(t *testing.T, err error) *providers.Error {
	t.Helper()
	var pe *providers.Error
	require.True(t, errors.As(err, &pe), "want a *providers.Error, got %T: %v", err, err)
	return pe
}

func recording(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "recordings", name))
	require.NoError(t, err)
	return string(b)
}

// readAll reads a chat stream to its end.
func readAll(t *testing.T, s providers.Stream) ([]*pb.ChatCompletionChunk, error) {
	t.Helper()
	var out []*pb.ChatCompletionChunk
	for {
		ch, err := s.Recv()
		if err != nil {
			return out, err
		}
		out = append(out, ch)
	}
}

// readEvents reads a native stream to its end.
func readEvents(t *testing.T, s providers.EventStream) ([]providers.Event, error) {
	t.Helper()
	var out []providers.Event
	for {
		ev, err := s.Next()
		if err != nil {
			return out, err
		}
		out = append(out, providers.Event{Type: ev.Type, Data: append([]byte(nil), ev.Data...)})
	}
}

var ctx = context.Background()
