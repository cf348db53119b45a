package openaijson_test

import (
	"os"
	"strings"
	"testing"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/openaijson"
)

// TestAllocationCeilings fails when a hot path allocates more than it did when the
// ceiling was set (measured, plus a little slack), without timing anything.
func TestAllocationCeilings(t *testing.T) {
	resp, _ := os.ReadFile("../internal/fakeupstream/testdata/chat_completion.json")
	stream, _ := os.ReadFile("../internal/fakeupstream/testdata/chat_completion_stream.txt")
	events := strings.SplitN(string(stream), "\n\n", 3)
	chunk := []byte(strings.TrimPrefix(events[0], "data: "))
	second := []byte(strings.TrimPrefix(events[1], "data: "))
	var reader openaijson.ChunkReader
	if err := reader.Next(chunk, &pb.ChatCompletionChunk{}); err != nil {
		t.Fatal(err)
	}
	var req pb.ChatCompletionRequest
	var c pb.ChatCompletionChunk
	var r pb.ChatCompletion
	buf := make([]byte, 0, 4096)
	cases := []struct {
		name    string
		ceiling float64
		run     func()
	}{
		{"decode request", 45, func() { _ = openaijson.Unmarshal([]byte(benchRequest), &req) }},
		{"decode response", 105, func() { _ = openaijson.Unmarshal(resp, &r) }},
		{"decode chunk", 45, func() { _ = openaijson.Unmarshal(chunk, &c) }},
		{"decode chunk (fast path)", 21, func() { _ = openaijson.UnmarshalChunk(chunk, &c) }},
		// its first choice, delta and content in one block; its envelope the chunk's before
		{"decode chunk after another", 13, func() { _ = reader.Next(second, &pb.ChatCompletionChunk{}) }},
		{"decode response (fast path)", 60, func() { _ = openaijson.UnmarshalCompletion(resp, &r) }},
		{"encode request", 8, func() { buf = openaijson.Append(buf[:0], &req) }},
		{"encode response", 5, func() { buf = openaijson.Append(buf[:0], &r) }},
		{"encode chunk", 4, func() { buf = openaijson.Append(buf[:0], &c) }},
		{"inspect chunk (REST relay)", 0, func() { _, _ = openaijson.InspectChunk(chunk) }},
	}
	for _, tc := range cases { // in order: the encode cases encode what the decode cases decoded
		t.Run(tc.name, func(t *testing.T) {
			tc.run()
			got := testing.AllocsPerRun(200, tc.run)
			if got > tc.ceiling {
				t.Errorf("%s: %.0f allocations, ceiling %.0f", tc.name, got, tc.ceiling)
			}
		})
	}
}
