// Package bufpool lends the large buffers request bodies are read into, and
// takes one back when the last of its holders lets go of it: the handler that
// read the body, and each upstream request body still sending from it (a
// transport may read a request body after its round trip returned, and closes
// it when it is done).
//
// The buffers lie outside the Go heap (see shelf.go): a megabyte lent is not a
// megabyte of live heap that lets the garbage collector wait for another
// before it runs. So a slice of one does not keep it: whoever reads a buffer
// holds its Ref (Hold), or a context carrying it (With), until done.
package bufpool

import (
	"math/bits"
	"sync/atomic"
)

// Sizes lent: from MinSize to MaxSize, in four steps from each power of two to
// the next (64, 80, 96, 112, 128, 160 KiB, ...), so that a buffer is at most a
// quarter larger than asked (a 590 KB one is 640 KiB, not 1 MiB). Smaller
// bodies are not worth a pool; larger ones are allocated as before.
const (
	minShift = 16
	maxShift = 20
	MinSize  = 1 << minShift
	MaxSize  = 1 << maxShift
	classes  = (maxShift-minShift)*4 + 1
)

// classOf is the class of the smallest size lent that holds n (MinSize..MaxSize).
func classOf(n int) int {
	if n <= MinSize {
		return 0
	}
	s := bits.Len(uint(n-1)) - 1              // 1<<s < n <= 1<<(s+1)
	j := (n - 1<<s + 1<<(s-2) - 1) >> (s - 2) // quarters of 1<<s past it, rounded up: 1..4
	return (s-minShift)*4 + j
}

// sizeOf is the size of the buffers of class c.
func sizeOf(c int) int {
	if c == 0 {
		return MinSize
	}
	s, j := minShift+(c-1)/4, (c-1)%4+1
	return 1<<s + j<<(s-2)
}

// lease is a buffer and its state: how many times it was lent (the high 32
// bits) and how many hold it now (the low 32). Its shelf's fields are read and
// written only under the shelf's lock, while it is on the shelf.
type lease struct {
	buf   []byte
	class int
	state atomic.Uint64

	mapped bool   // buf lies outside the Go heap (else: mapping failed, a plain slice)
	idle   uint32 // the collection count when it was last given back
	cold   bool   // its pages were given back to the system
}

// Ref is one lending of a buffer. The zero Ref lends nothing: Hold says yes,
// Release does nothing, Buf is nil.
type Ref struct {
	l   *lease
	gen uint32
}

// Get lends a buffer of at least n bytes, held once by the caller; the zero
// Ref when n is outside MinSize..MaxSize.
func Get(n int) Ref {
	if n < MinSize || n > MaxSize {
		return Ref{}
	}
	class := classOf(n)
	l, cold := shelves[class].take()
	if l == nil || cold {
		cool(class, sizeOf(class))
	}
	if l == nil {
		l = newLease(class)
	}
	gen := uint32(l.state.Load()>>32) + 1
	l.state.Store(uint64(gen)<<32 | 1) // no holder is left: no one else touches it
	return Ref{l, gen}
}

// Buf is the buffer (len 0), to read into up to its capacity.
func (r Ref) Buf() []byte {
	if r.l == nil {
		return nil
	}
	return r.l.buf[:0]
}

// Hold adds a holder; false when every holder of this lending has let go
// already (the buffer may be another request's by now: do not read it).
func (r Ref) Hold() bool {
	if r.l == nil {
		return true
	}
	for {
		s := r.l.state.Load()
		if uint32(s>>32) != r.gen || uint32(s) == 0 {
			return false
		}
		if r.l.state.CompareAndSwap(s, s+1) {
			return true
		}
	}
}

// Release lets go of one hold; the last one gives the buffer back. A release
// of a lending that has no holder left panics before it changes anything: it
// must not take a hold from the buffer's next lending.
func (r Ref) Release() {
	if r.l == nil {
		return
	}
	for {
		s := r.l.state.Load()
		if uint32(s>>32) != r.gen || uint32(s) == 0 {
			panic("bufpool: a buffer released more often than held")
		}
		if r.l.state.CompareAndSwap(s, s-1) {
			if uint32(s) == 1 {
				shelves[r.l.class].put(r.l)
			}
			return
		}
	}
}
