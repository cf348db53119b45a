package bufpool

import (
	"runtime"
	"testing"
	"unsafe"
)

func TestAGivenBackBufferIsTheNextLent(t *testing.T) {
	r := Get(MaxSize)
	r.Release()
	next := Get(MaxSize)
	defer next.Release()
	if next.l != r.l {
		t.Fatal("the buffer given back last was not the next one lent")
	}
}

// A buffer left on its shelf through two collections gives its pages back
// and keeps its mapping: it reads as zeros, and is lent again.
func TestAWaitingBufferGivesItsPagesBack(t *testing.T) {
	r := Get(MaxSize)
	l := r.l
	b := r.Buf()[:MaxSize]
	for i := range b {
		b[i] = 0xAA
	}
	r.Release()
	s := &shelves[l.class]
	s.trim(l.idle + 1)
	if l.cold || b[MaxSize/2] != 0xAA {
		t.Fatal("a buffer that waited through one collection lost its pages")
	}
	s.trim(l.idle + 2)
	if !l.mapped {
		if len(s.free) > 0 && s.free[len(s.free)-1] == l {
			t.Fatal("a buffer on the Go heap stayed on its shelf after two collections")
		}
		t.Skip("buffers are not mapped here")
	}
	if !l.cold {
		t.Fatal("a buffer that waited through two collections kept its pages")
	}
	for i, c := range b {
		if c != 0 {
			t.Fatalf("byte %d of a buffer whose pages were given back reads %#x", i, c)
		}
	}
	next := Get(MaxSize)
	defer next.Release()
	if next.l != l || next.l.cold {
		t.Fatal("the cold buffer was not lent again, warm")
	}
}

// Buffers lent are not Go heap: holding 32 MiB of them leaves the heap as it was.
func TestLentBuffersAreOutsideTheHeap(t *testing.T) {
	if _, mapped := mapBuf(MinSize); !mapped {
		t.Skip("buffers are not mapped here")
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	refs := make([]Ref, 32)
	for i := range refs {
		refs[i] = Get(MaxSize)
		_ = append(refs[i].Buf(), make([]byte, 16)...)
	}
	runtime.ReadMemStats(&after)
	for _, r := range refs {
		r.Release()
	}
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 4<<20 {
		t.Fatalf("lending 32 MiB grew the heap by %d bytes", grew)
	}
}

// A lending never released (its handler panicked) has its buffer put back on
// the shelf, cold, once nothing refers to the lease.
func TestALostBufferComesBack(t *testing.T) {
	if _, mapped := mapBuf(MinSize); !mapped {
		t.Skip("buffers are not mapped here")
	}
	const size = 3 * MaxSize / 4
	lostAt := func() uintptr {
		r := Get(size)
		return uintptr(unsafe.Pointer(unsafe.SliceData(r.Buf())))
	}()
	s := &shelves[classOf(size)]
	for range 20 {
		runtime.GC()
		s.mu.Lock()
		for _, l := range s.free {
			if uintptr(unsafe.Pointer(unsafe.SliceData(l.buf))) == lostAt {
				s.mu.Unlock()
				if !l.cold {
					t.Fatal("a lost buffer came back with its pages")
				}
				return
			}
		}
		s.mu.Unlock()
		runtime.Gosched()
	}
	t.Fatal("a lost buffer did not come back after 20 collections")
}

// A buffer that takes pages from the system (mapped new, or lent again cold)
// has buffers of other sizes waiting warm give theirs back first: a load that
// moves from one size to another does not hold both.
func TestTakingPagesCoolsOtherSizes(t *testing.T) {
	if _, mapped := mapBuf(MinSize); !mapped {
		t.Skip("buffers are not mapped here")
	}
	for i := range shelves { // what other tests left: lent no more, and not waiting warm
		for l, _ := shelves[i].take(); l != nil; l, _ = shelves[i].take() {
		}
	}
	warm := func() (*lease, []byte) {
		r := Get(MaxSize)
		b := r.Buf()[:MaxSize]
		for i := range b {
			b[i] = 0xAA
		}
		r.Release()
		return r.l, b
	}
	cases := []struct {
		name string
		lend func() Ref // a lending of another size that takes pages
	}{
		{"a buffer mapped new", func() Ref { return Get(MinSize + 1) }},
		{"a cold buffer lent again", func() Ref {
			r := Get(MinSize + 1)
			r.Release()
			r.l.chill() // as trim leaves it
			return Get(MinSize + 1)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, b := warm()
			r := tc.lend()
			defer r.Release()
			if !l.cold || b[MaxSize/2] != 0 {
				t.Fatal("a warm buffer of another size kept its pages")
			}
		})
	}
	t.Run("a warm buffer lent again cools nothing", func(t *testing.T) {
		big := Get(MaxSize) // lent while the small one warms up: none cools it
		r := Get(MinSize + 1)
		r.Release()
		l, b := big.l, big.Buf()[:MaxSize]
		for i := range b {
			b[i] = 0xAA
		}
		big.Release()
		again := Get(MinSize + 1) // warm
		defer again.Release()
		if l.cold || b[MaxSize/2] != 0xAA {
			t.Fatal("a warm lending took the pages of a buffer of another size")
		}
	})
}
