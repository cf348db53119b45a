package codec

import "google.golang.org/grpc/mem"

// smallMax is the longest encoding that is not lent from grpc-go's pool (its
// pooling threshold).
const smallMax = 1024

// smallFor returns a short message's bytes (len size) and the one-buffer
// BufferSlice grpc-go takes that carries them, in two allocations instead of
// three: the slice's one element is a *SliceBuffer that lives beside it (its
// methods are SliceBuffer's, and Free does nothing, so the collector frees
// them as it would have). A stream sends one a chunk.
func smallFor(size int) (mem.BufferSlice, []byte) {
	h := new(struct {
		buf mem.SliceBuffer
		one [1]mem.Buffer
	})
	h.buf = make([]byte, size)
	h.one[0] = &h.buf
	return h.one[:], h.buf
}
