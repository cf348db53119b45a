package openaijson_test

import (
	"testing"
	"unsafe"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/openaijson"
)

// TestChunkReaderTakesARepeatedEnvelope: a chunk whose envelope repeats the
// one before's byte for byte takes that chunk's values, not read again. The id
// is written with an escape, which reading decodes into a string of its own
// each time (a string is shared only when it is written as it is): the same
// string in every chunk says the envelope was taken; a chunk whose envelope
// differs (created) reads it again, and the chunks after it take that one.
func TestChunkReaderTakesARepeatedEnvelope(t *testing.T) {
	head := func(created string) string {
		return `{"id":"chat\u0063mpl-1","object":"chat.completion.chunk","created":` + created + `,"model":"m",`
	}
	stream := []struct {
		data  string
		taken bool // the envelope is the chunk before's
	}{
		{head("1") + `"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`, false},
		{head("1") + `"choices":[{"index":0,"delta":{"content":"a"}}]}`, true},
		{head("1") + `"choices":[{"index":0,"delta":{"content":"b"}}],"obfuscation":"x"}`, true},
		{head("2") + `"choices":[{"index":0,"delta":{"content":"c"}}]}`, false},
		{head("2") + `"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`, true},
	}
	var r openaijson.ChunkReader
	var before *pb.ChatCompletionChunk
	for i, e := range stream {
		c := &pb.ChatCompletionChunk{}
		if err := r.Next([]byte(e.data), c); err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
		if c.Id != "chatcmpl-1" {
			t.Fatalf("chunk %d: id %q", i, c.Id)
		}
		if before != nil {
			if taken := unsafe.StringData(c.Id) == unsafe.StringData(before.Id); taken != e.taken {
				t.Errorf("chunk %d: envelope taken from the chunk before: %v, want %v", i, taken, e.taken)
			}
		}
		before = c
	}
}
