package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/switchyard/switchyard/anthropicjson"
	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/resilience"
	"github.com/switchyard/switchyard/router"
)

// fakeMessenger is a provider that speaks Anthropic's wire (providers.Messenger
// and TokenCounter): it records the bodies it gets and answers as scripted.
type fakeMessenger struct {
	name   string
	answer string
	err    error
	// events are a stream's events; end is what Next returns after them (nil: io.EOF).
	events []providers.Event
	end    error
	mu     sync.Mutex
	bodies []string
}

func (p *fakeMessenger) Name() string                             { return p.name }
func (p *fakeMessenger) Models(context.Context) ([]string, error) { return []string{"claude"}, nil }
func (p *fakeMessenger) Chat(context.Context, *providers.Request) (*pb.ChatCompletion, error) {
	return nil, errors.New("a /v1/messages call reached Chat of a Messenger")
}
func (p *fakeMessenger) Stream(context.Context, *providers.Request) (providers.Stream, error) {
	return nil, errors.New("a /v1/messages call reached Stream of a Messenger")
}

func (p *fakeMessenger) record(a providers.Attempt, body []byte) {
	body, _ = anthropicjson.RewriteModel(body, a.Model) // as the provider sends it
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bodies = append(p.bodies, string(body))
}

func (p *fakeMessenger) got() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.bodies...)
}

func (p *fakeMessenger) Messages(_ context.Context, a providers.Attempt, body []byte) ([]byte, error) {
	p.record(a, body)
	if p.err != nil {
		return nil, p.err
	}
	return []byte(p.answer), nil
}

func (p *fakeMessenger) StreamMessages(_ context.Context, a providers.Attempt, body []byte) (providers.EventStream, error) {
	p.record(a, body)
	if p.err != nil {
		return nil, p.err
	}
	return &fakeEvents{events: p.events, end: p.end}, nil
}

func (p *fakeMessenger) CountTokens(_ context.Context, a providers.Attempt, body []byte) ([]byte, error) {
	p.record(a, body)
	return []byte(`{"input_tokens":42}`), nil
}

type fakeEvents struct {
	events []providers.Event
	end    error
}

func (s *fakeEvents) Next() (providers.Event, error) {
	if len(s.events) == 0 {
		if s.end != nil {
			return providers.Event{}, s.end
		}
		return providers.Event{}, io.EOF
	}
	ev := s.events[0]
	s.events = s.events[1:]
	return ev, nil
}

func (s *fakeEvents) Close() error { return nil }

// fakeChat is a provider that speaks OpenAI's chat wire only.
type fakeChat struct {
	name   string
	err    error
	chunks []*pb.ChatCompletionChunk
	end    error // after the chunks (nil: io.EOF)
	mu     sync.Mutex
	reqs   []*pb.ChatCompletionRequest
}

func (p *fakeChat) Name() string                             { return p.name }
func (p *fakeChat) Models(context.Context) ([]string, error) { return []string{"gpt"}, nil }

func (p *fakeChat) Chat(_ context.Context, req *providers.Request) (*pb.ChatCompletion, error) {
	p.mu.Lock()
	p.reqs = append(p.reqs, req.Body)
	p.mu.Unlock()
	if p.err != nil {
		return nil, p.err
	}
	return &pb.ChatCompletion{Id: "chatcmpl-c1", Object: "chat.completion", Model: req.Model, Choices: []*pb.Choice{{
		Message: &pb.ChatMessage{Role: "assistant", Content: structpb.NewStringValue("Hello from chat")}, FinishReason: proto.String("stop")}},
		Usage: &pb.Usage{PromptTokens: 7, CompletionTokens: 3, TotalTokens: 10}}, nil
}

func (p *fakeChat) Stream(_ context.Context, req *providers.Request) (providers.Stream, error) {
	p.mu.Lock()
	p.reqs = append(p.reqs, req.Body)
	p.mu.Unlock()
	if p.err != nil {
		return nil, p.err
	}
	return &fakeChunks{chunks: p.chunks, end: p.end}, nil
}

type fakeChunks struct {
	chunks []*pb.ChatCompletionChunk
	end    error
}

func (s *fakeChunks) Recv() (*pb.ChatCompletionChunk, error) {
	if len(s.chunks) == 0 {
		if s.end != nil {
			return nil, s.end
		}
		return nil, io.EOF
	}
	c := s.chunks[0]
	s.chunks = s.chunks[1:]
	return c, nil
}

func (s *fakeChunks) Close() error { return nil }

func textChunk(text, finish string) *pb.ChatCompletionChunk {
	ch := &pb.ChunkChoice{Delta: &pb.ChatDelta{}}
	if text != "" {
		ch.Delta.Content = proto.String(text)
	}
	if finish != "" {
		ch.FinishReason = proto.String(finish)
	}
	return &pb.ChatCompletionChunk{Id: "chatcmpl-s1", Object: "chat.completion.chunk", Model: "gpt", Choices: []*pb.ChunkChoice{ch}}
}

// serveMessages starts a Server whose router has the given providers (each
// serving its listed models) and, optionally, virtual models.
func serveMessages(t *testing.T, vms []router.VirtualModel, ps ...providers.Provider) *running {
	t.Helper()
	return serve(t, func(c *Config) {
		var targets []router.Target
		noRetry := resilience.DefaultRetry()
		noRetry.MaxRetries = 0 // one attempt per target: the tests count them
		for _, p := range ps {
			models, _ := p.Models(context.Background())
			targets = append(targets, router.Target{Provider: p, Configured: models,
				Guard: resilience.NewGuard(resilience.GuardConfig{Provider: p.Name(), Retry: noRetry, Breaker: resilience.DefaultBreaker()})})
		}
		c.Router = router.New(c.Log, targets)
		if vms != nil {
			require.NoError(t, c.Router.SetVirtualModels(vms))
		}
	})
}

// postMessages sends a /v1/messages request; header pairs follow the body.
func postMessages(t *testing.T, r *running, path, body string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+r.http+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

// logLine is the last log line with message msg and, in pairs, these values.
func logLine(t *testing.T, r *running, msg string, kv ...string) map[string]any {
	t.Helper()
	var found map[string]any
	for _, l := range strings.Split(r.logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil || m["msg"] != msg {
			continue
		}
		ok := true
		for i := 0; i+1 < len(kv); i += 2 {
			ok = ok && m[kv[i]] == kv[i+1]
		}
		if ok {
			found = m
		}
	}
	require.NotNil(t, found, "no %q line with %v in:\n%s", msg, kv, r.logs.String())
	return found
}
