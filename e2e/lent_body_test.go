package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/fakeupstream"
)

// Long REST bodies are read into lent buffers, and long gRPC conversations
// transcoded into them, and sent upstream from them; a buffer goes back only
// when its request and every upstream body reading it are done. Under
// concurrent long requests, some retried after a 503 or a reset connection (a
// second upstream body from the same buffer), every upstream request carries
// exactly the conversation its own client sent.
func TestLongBodiesReachTheirOwnUpstreamRequests(t *testing.T) {
	t.Parallel()
	for _, surface := range []string{"rest", "grpc", "grpc-stream"} {
		t.Run(surface, func(t *testing.T) {
			t.Parallel()
			longBodiesReachTheirOwnUpstreamRequests(t, surface)
		})
	}
}

func longBodiesReachTheirOwnUpstreamRequests(t *testing.T, surface string) {
	// Faults are a quarter of the first 32 answers, and a request may be retried
	// ten times: concurrent requests draw the answers in any order, and one
	// that drew eleven faults in a row would fail the test for nothing.
	g := start(t, "", withYAML("resilience:\n  retry:\n    max_retries: 10\n    initial_backoff: 1ms\n    max_backoff: 5ms\n    budget_percent: 100\n"+
		"  circuit_breaker:\n    failure_threshold: 1000\n"))
	var faults []fakeupstream.Reply
	for range 4 {
		faults = append(faults, fakeupstream.Reply{Status: 503}, fakeupstream.Reply{}, fakeupstream.Reply{}, fakeupstream.Reply{},
			fakeupstream.Reply{Reset: true}, fakeupstream.Reply{}, fakeupstream.Reply{}, fakeupstream.Reply{})
	}
	g.up.Script(faults...)
	sent := sendLongRequests(t, g, surface, 3, 12, 70<<10)
	requireOwnBodies(t, g, sent)
}

// An upstream that answers before it reads the body (and reads it only later):
// the gateway's request may end while its transport is still sending the body
// from the lent buffer, which the body's reader holds until the transport
// closes it. Every byte the upstream reads after answering is its own
// client's. (Here the kernel's socket buffers take a body this size at once, so
// the test does not catch readers that forget to hold: the providers'
// TestPiecesReaderOfALentBuffer holds them to it.)
func TestAnUpstreamAnsweringBeforeItReadsTheBody(t *testing.T) {
	t.Parallel()
	for _, surface := range []string{"rest", "grpc"} {
		t.Run(surface, func(t *testing.T) {
			t.Parallel()
			upstreamAnsweringBeforeItReadsTheBody(t, surface)
		})
	}
}

func upstreamAnsweringBeforeItReadsTheBody(t *testing.T, surface string) {
	g := start(t, "")
	g.up.SetDefault(fakeupstream.Reply{AnswerFirst: true, Delay: 150 * time.Millisecond})
	sent := sendLongRequests(t, g, surface, 3, 8, 600<<10)
	deadline := time.Now().Add(10 * time.Second)
	for g.up.Finished() < len(sent) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // the upstream reads the bodies after answering
	}
	requireOwnBodies(t, g, sent)
}

// sendLongRequests sends rounds of n concurrent chat requests through the SDK
// (surface rest) or the generated gRPC client (grpc, grpc-stream), each a conversation of
// about size bytes of its own, and returns them by the marker each starts with.
func sendLongRequests(t *testing.T, g *gateway, surface string, rounds, n, size int) map[string]string {
	client, chat := sdk(g, "k"), pb.NewChatServiceClient(g.conn)
	send := func(text string) error {
		req := &pb.ChatCompletionRequest{Model: "up/gpt-4o",
			Messages: []*pb.ChatMessage{{Role: "user", Content: structpb.NewStringValue(text)}}}
		switch surface {
		case "grpc":
			resp, err := chat.CreateChatCompletion(withKey("k"), req)
			if err == nil && len(resp.Choices) != 1 {
				err = fmt.Errorf("%d choices", len(resp.Choices))
			}
			return err
		case "grpc-stream":
			st, err := chat.StreamChatCompletion(withKey("k"), req)
			if err != nil {
				return err
			}
			chunks := 0
			for ; ; chunks++ {
				if _, err := st.Recv(); err == io.EOF {
					break
				} else if err != nil {
					return err
				}
			}
			if chunks == 0 {
				return fmt.Errorf("no chunks")
			}
			return nil
		}
		resp, err := client.Chat.Completions.New(context.Background(), userMsg(text))
		if err == nil && len(resp.Choices) != 1 {
			err = fmt.Errorf("%d choices", len(resp.Choices))
		}
		return err
	}
	sent := map[string]string{}
	var mu sync.Mutex
	for round := range rounds {
		var wg sync.WaitGroup
		for i := range n {
			marker := fmt.Sprintf("<request %d.%d>", round, i)
			text := strings.Repeat(marker+" a long \"prompt\"\twith é and 漢字\n", size/40+i*97)
			mu.Lock()
			sent[marker] = text
			mu.Unlock()
			wg.Go(func() {
				if err := send(text); err != nil {
					t.Errorf("%s: %v", marker, err)
				}
			})
		}
		wg.Wait()
	}
	return sent
}

// requireOwnBodies checks that every upstream request carries one of the sent
// conversations whole, and that each reached the upstream.
func requireOwnBodies(t *testing.T, g *gateway, sent map[string]string) {
	t.Helper()
	answered := map[string]bool{}
	for _, r := range g.up.Requests() {
		var body struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		require.NoError(t, json.Unmarshal(r.Body, &body), "an upstream body is not JSON")
		require.Len(t, body.Messages, 1)
		got := body.Messages[0].Content
		marker, _, _ := strings.Cut(got, " a long")
		want, ok := sent[marker]
		require.True(t, ok, "an upstream body starts with %.40q", got)
		require.True(t, got == want, "%s: the upstream got %d bytes, not the %d its client sent", marker, len(got), len(want))
		require.True(t, bytes.Contains(r.Body, []byte(`"model":"gpt-4o"`)))
		answered[marker] = true
	}
	require.Len(t, answered, len(sent))
}
