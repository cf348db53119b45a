package openaijson

import (
	"bytes"

	"google.golang.org/protobuf/proto"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
)

// ChunkReader decodes a stream's chunks in order, each into what UnmarshalChunk
// gives. A stream repeats its envelope (id, object, created, model,
// service_tier, system_fingerprint) in every chunk, byte for byte: a chunk
// whose bytes up to its "choices" are those of the last chunk read in full,
// and were envelope members only, takes that chunk's values for them instead
// of reading them again; a chunk whose envelope is read shares the strings it
// repeats with the chunk before (they are never written through).
type ChunkReader struct {
	head []byte // the envelope's bytes (nil: none to reuse)
	env  chunkEnvelope
	last *pb.ChatCompletionChunk
}

type chunkEnvelope struct {
	id, object, model string
	created           int64
	fingerprint, tier *string
}

// Next decodes the next chunk, data, into c, a new (empty) chunk: it is reset
// only when it has to be read again (the generated Reset stores the message's
// type information atomically, a cost per chunk).
func (r *ChunkReader) Next(data []byte, c *pb.ChatCompletionChunk) error {
	if n := len(r.head); n > 0 && len(data) > n && bytes.Equal(data[:n], r.head) {
		c.Id, c.Object, c.Created, c.Model = r.env.id, r.env.object, r.env.created, r.env.model
		c.SystemFingerprint, c.ServiceTier = r.env.fingerprint, r.env.tier
		d := chunkDecoder{s: scanner{data: data, pos: n, depth: 1}, prev: r.last}
		member := d.chunkMember(c)
		err := d.s.members(func(key []byte) error {
			if !member(key) {
				return errFallback
			}
			return nil
		})
		if err == nil && d.s.atEnd() {
			r.last = c
			return nil
		}
		proto.Reset(c) // read it in full: that path names what is wrong
	}
	d := chunkDecoder{s: scanner{data: data}, prev: r.last, head: headTrack{plain: true}}
	if !d.chunk(c) || !d.s.atEnd() { // Unmarshal resets c
		r.head = r.head[:0]
		return Unmarshal(data, c)
	}
	r.last = c
	if d.head.end == 0 || !d.head.plain || d.head.later {
		r.head = r.head[:0]
		return nil
	}
	if !bytes.Equal(r.head, data[:d.head.end]) {
		r.head = append(r.head[:0], data[:d.head.end]...)
	}
	r.env = chunkEnvelope{c.Id, c.Object, c.Model, c.Created, c.SystemFingerprint, c.ServiceTier}
	return nil
}
