package openaijson_test

import (
	"os"
	"strings"
	"testing"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/openaijson"
)

const benchRequest = `{"model":"openai/gpt-4o","messages":[{"role":"system","content":"You are a helpful assistant."},` +
	`{"role":"user","content":"Say hello to the world in one short sentence."}],"temperature":0.2,"max_tokens":64,"top_k":40}`

func load(b *testing.B, path string) []byte {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

func firstChunk(b *testing.B) []byte {
	text := string(load(b, "../internal/fakeupstream/testdata/chat_completion_stream.txt"))
	line := strings.SplitN(text, "\n", 2)[0]
	return []byte(strings.TrimPrefix(line, "data: "))
}

func BenchmarkDecodeRequest(b *testing.B) {
	b.ReportAllocs()
	data := []byte(benchRequest)
	for b.Loop() {
		var req pb.ChatCompletionRequest
		if err := openaijson.Unmarshal(data, &req); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeRequest(b *testing.B) {
	b.ReportAllocs()
	var req pb.ChatCompletionRequest
	_ = openaijson.Unmarshal([]byte(benchRequest), &req)
	buf := make([]byte, 0, 1024)
	for b.Loop() {
		buf = openaijson.Append(buf[:0], &req)
	}
}

func BenchmarkDecodeResponse(b *testing.B) {
	b.ReportAllocs()
	data := load(b, "../internal/fakeupstream/testdata/chat_completion.json")
	for b.Loop() {
		var resp pb.ChatCompletion
		if err := openaijson.Unmarshal(data, &resp); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeResponse(b *testing.B) {
	b.ReportAllocs()
	var resp pb.ChatCompletion
	_ = openaijson.Unmarshal(load(b, "../internal/fakeupstream/testdata/chat_completion.json"), &resp)
	buf := make([]byte, 0, 1024)
	for b.Loop() {
		buf = openaijson.Append(buf[:0], &resp)
	}
}

func BenchmarkDecodeChunk(b *testing.B) {
	b.ReportAllocs()
	data := firstChunk(b)
	for b.Loop() {
		var c pb.ChatCompletionChunk
		if err := openaijson.Unmarshal(data, &c); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeChunk(b *testing.B) {
	b.ReportAllocs()
	var c pb.ChatCompletionChunk
	_ = openaijson.Unmarshal(firstChunk(b), &c)
	buf := make([]byte, 0, 1024)
	for b.Loop() {
		buf = openaijson.Append(buf[:0], &c)
	}
}

func BenchmarkDecodeChunkFast(b *testing.B) {
	b.ReportAllocs()
	data := firstChunk(b)
	for b.Loop() {
		var c pb.ChatCompletionChunk
		if err := openaijson.UnmarshalChunk(data, &c); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeResponseFast(b *testing.B) {
	b.ReportAllocs()
	data := load(b, "../internal/fakeupstream/testdata/chat_completion.json")
	for b.Loop() {
		var resp pb.ChatCompletion
		if err := openaijson.UnmarshalCompletion(data, &resp); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkInspectChunk(b *testing.B) {
	b.ReportAllocs()
	data := firstChunk(b)
	for b.Loop() {
		if _, err := openaijson.InspectChunk(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChunkReader reads a stream's next chunk after one with the same
// envelope, against the chunk decoded alone (UnmarshalChunk).
func BenchmarkChunkReader(b *testing.B) {
	const head = `{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1769092764,"model":"gpt-4o","service_tier":"default","system_fingerprint":"fp_29330a9688",`
	first := []byte(head + `"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]}`)
	next := []byte(head + `"choices":[{"index":0,"delta":{"content":"World! "},"logprobs":null,"finish_reason":null}]}`)
	b.Run("reader", func(b *testing.B) {
		var r openaijson.ChunkReader
		if err := r.Next(first, &pb.ChatCompletionChunk{}); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if err := r.Next(next, &pb.ChatCompletionChunk{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("alone", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := openaijson.UnmarshalChunk(next, &pb.ChatCompletionChunk{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
