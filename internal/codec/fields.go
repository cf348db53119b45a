package codec

import (
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
)

// fieldReader reads a message's top-level fields from the buffers grpc-go
// received it in (about one HTTP/2 frame, 16 KB, each): a field that lies in
// one buffer is read in place, one that crosses into the next is copied out
// alone. A 512 KB history is thus not gathered into one buffer first (a copy
// of all of it, and a pooled megabyte held per request in flight).
type fieldReader struct {
	bufs [][]byte
	i    int // the buffer being read
	off  int // where in it
	left int // bytes not read yet, in all
}

func newFieldReader(data mem.BufferSlice) *fieldReader {
	r := &fieldReader{bufs: make([][]byte, 0, len(data))}
	for _, b := range data {
		if d := b.ReadOnlyData(); len(d) > 0 {
			r.bufs = append(r.bufs, d)
			r.left += len(d)
		}
	}
	return r
}

// next returns the next whole field (tag and value) and whether there was
// one; ok is false at bytes that do not parse as a field (or a group, which
// the transcoder never takes).
func (r *fieldReader) next() (field []byte, more, ok bool) {
	if r.left == 0 {
		return nil, false, true
	}
	var head [20]byte // a tag and a length, or a tag and a scalar: two varints at most
	h := r.bufs[r.i][r.off:]
	if len(h) >= len(head) {
		h = h[:len(head)] // in place, most often
	} else {
		h = r.peek(head[:0], len(head)) // across buffers, or at the end
	}
	num, typ, n := protowire.ConsumeTag(h)
	if n < 0 || typ == protowire.StartGroupType || typ == protowire.EndGroupType {
		return nil, false, false
	}
	size := 0
	if typ == protowire.BytesType {
		l, m := protowire.ConsumeVarint(h[n:])
		if m < 0 || l > uint64(r.left) {
			return nil, false, false
		}
		size = n + m + int(l)
	} else if m := protowire.ConsumeFieldValue(num, typ, h[n:]); m >= 0 {
		size = n + m
	} else {
		return nil, false, false
	}
	if size > r.left {
		return nil, false, false
	}
	return r.take(size), true, true
}

// peek is up to n of the bytes not read yet, appended to b, without reading them.
func (r *fieldReader) peek(b []byte, n int) []byte {
	for i, off := r.i, r.off; len(b) < n && i < len(r.bufs); i, off = i+1, 0 {
		b = append(b, r.bufs[i][off:min(len(r.bufs[i]), off+n-len(b))]...)
	}
	return b
}

// take reads the next n bytes (n <= left): in place when they lie in one buffer.
func (r *fieldReader) take(n int) []byte {
	r.left -= n
	if cur := r.bufs[r.i][r.off:]; n <= len(cur) {
		r.advance(n)
		return cur[:n]
	}
	out := make([]byte, 0, n)
	for len(out) < n {
		cur := r.bufs[r.i][r.off:]
		k := min(len(cur), n-len(out))
		out = append(out, cur[:k]...)
		r.advance(k)
	}
	return out
}

func (r *fieldReader) advance(k int) {
	r.off += k
	if r.off == len(r.bufs[r.i]) && r.i+1 < len(r.bufs) {
		r.i, r.off = r.i+1, 0
	}
}
