package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
)

// prompt is one request body shape: a chat history of about kb kilobytes, as
// agents, RAG and long chats send it (alternating turns of prose with quotes,
// newlines, tabs and non-ASCII text, so JSON escaping is exercised), or the
// classic two-message request when kb is 0.
type prompt struct {
	kb   int
	msgs []message
}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// turnText is one turn's worth of text (~1 KB) that needs escaping in JSON.
const turnText = "The \"gateway\" forwards each request\tto its target; when the target fails, " +
	"it retries with backoff and jitter,\nthen fails over to the next one in the chain. " +
	"Café, naïve, 漢字, emoji-free ✓. Numbers: 3.14159, 2.71828; paths: C:\\tmp\\x.json. "

func newPrompt(kb int) prompt {
	p := prompt{kb: kb, msgs: []message{{"system", "You are a helpful assistant."}}}
	if kb == 0 {
		p.msgs = append(p.msgs, message{"user", "Say hello to the world in one short sentence."})
		return p
	}
	size, turn := 0, 0
	for size < kb<<10 {
		role := "user"
		if turn%2 == 1 {
			role = "assistant"
		}
		text := strings.Repeat(turnText, 4) + "Turn " + strconv.Itoa(turn) + "."
		p.msgs = append(p.msgs, message{role, text})
		size += len(text) + 64
		turn++
	}
	if p.msgs[len(p.msgs)-1].Role != "user" {
		p.msgs = append(p.msgs, message{"user", "Summarise the conversation in one sentence."})
	}
	return p
}

func (p prompt) label() string {
	if p.kb == 0 {
		return "small"
	}
	return fmt.Sprintf("%d KB", p.kb)
}

// rest is the REST body.
func (p prompt) rest(stream bool) []byte {
	body := map[string]any{"model": "openai/gpt-4o", "messages": p.msgs, "temperature": 0.2, "max_tokens": 64}
	if stream {
		body["stream"] = true
		body["stream_options"] = map[string]any{"include_usage": true}
	}
	b, _ := json.Marshal(body)
	return b
}

// grpc is the gRPC request.
func (p prompt) grpc() *pb.ChatCompletionRequest {
	req := &pb.ChatCompletionRequest{Model: "openai/gpt-4o"}
	for _, m := range p.msgs {
		req.Messages = append(req.Messages, &pb.ChatMessage{Role: m.Role, Content: structpb.NewStringValue(m.Content)})
	}
	return req
}

// parseSizes reads -prompt-kb: comma-separated kilobytes, 0 for the small body.
func parseSizes(s string) ([]prompt, error) {
	var out []prompt
	for _, f := range strings.Split(s, ",") {
		kb, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || kb < 0 || kb > 16<<10 {
			return nil, fmt.Errorf("-prompt-kb: %q is not a size in KB (0 to 16384)", f)
		}
		out = append(out, newPrompt(kb))
	}
	return out, nil
}
