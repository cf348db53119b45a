package providers

import (
	"bytes"
	"errors"
	"io"
	"math"
	"net"
	"slices"
	"sync"

	"github.com/switchyard/switchyard/internal/bufpool"
)

// Pieces is a request body written in pieces, in order (openaijson.AppendPieces):
// a long conversation kept as it arrived is sent from the buffer it arrived in
// instead of being copied into one body first.
type Pieces [][]byte

// Len is the body's length in bytes.
func (p Pieces) Len() int64 {
	var n int64
	for _, b := range p {
		n += int64(len(b))
	}
	return n
}

// ReaderOf reads the body from its start (each call a new reader: a retry
// sends it again). Its pieces may point into the lent buffer ref (the zero Ref
// for none): the reader holds the buffer until it is closed and reads nothing
// after that. It is false when the buffer was let go already.
//
// A body of at most SmallBody bytes is copied into one and read from a
// bytes.Reader: net/http writes the headers of a request whose body it knows
// to be in memory together with that body (one write call, where a body of
// another type gets its headers flushed alone first, a second write call and
// a second packet for the upstream to read).
func (p Pieces) ReaderOf(ref bufpool.Ref) (io.ReadCloser, bool) {
	if !ref.Hold() {
		return nil, false
	}
	if n := p.Len(); n <= SmallBody {
		b := make([]byte, 0, n)
		for _, piece := range p {
			b = append(b, piece...)
		}
		ref.Release()
		return io.NopCloser(bytes.NewReader(b)), true
	}
	return &piecesReader{p: slices.Clone(p), ref: ref, held: true}, true // its own headers: reading moves them
}

// SmallBody is the largest body ReaderOf copies into one: with the request's
// headers it fits net/http's 4 KiB write buffer, so both go in one write call.
const SmallBody = 3 << 10

// ErrBodyReleased is what a body read after it was closed gets.
var ErrBodyReleased = errors.New("request body already closed")

type piecesReader struct {
	mu   sync.Mutex
	p    Pieces
	ref  bufpool.Ref
	held bool // not closed yet (ref is held)
}

func (r *piecesReader) Read(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.held {
		return 0, ErrBodyReleased
	}
	n := 0
	for len(r.p) > 0 && n < len(b) {
		c := copy(b[n:], r.p[0])
		n += c
		if r.p[0] = r.p[0][c:]; len(r.p[0]) == 0 {
			r.p = r.p[1:]
		}
	}
	if n == 0 && len(r.p) == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// WriteTo writes what is left (io.Copy's fast path): in one vectored write
// where w takes one (writev on a TCP connection), else piece by piece.
func (r *piecesReader) WriteTo(w io.Writer) (int64, error) {
	n, _, err := r.writeWithin(w, math.MaxInt64)
	return n, err
}

// writeWithin is WriteTo when at most limit bytes are left; ok is false, with
// nothing written, when more are.
func (r *piecesReader) writeWithin(w io.Writer, limit int64) (n int64, ok bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.held {
		return 0, true, ErrBodyReleased
	}
	if r.p.Len() > limit {
		return 0, false, nil
	}
	bufs := net.Buffers(r.p)
	n, err = bufs.WriteTo(w) // consumes bufs as it writes
	r.p = Pieces(bufs)
	return n, true, err
}

// Close lets go of the buffer (once, however often it is called).
func (r *piecesReader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held {
		r.held = false
		r.p = nil
		r.ref.Release()
	}
	return nil
}
