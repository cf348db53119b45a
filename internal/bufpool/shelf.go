package bufpool

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"

	"github.com/switchyard/switchyard/internal/gcwatch"
)

// A buffer given back waits on its class's shelf for the next lending. The
// buffers are mapped outside the Go heap (mapBuf) and are never unmapped: the
// pages of one left on its shelf through two garbage collections are given
// back to the system (dropPages), as sync.Pool drops what waited that long,
// and its mapping stays, so that a read through a slice kept by mistake finds
// zeros, never an unmapped page. Where mapping fails a buffer is a plain
// slice, dropped from its shelf instead.
type shelf struct {
	mu   sync.Mutex
	free []*lease // the most recently given back last
}

var shelves [classes]shelf

// collections is the count of garbage collections when gcwatch last called.
var collections atomic.Uint32

// take is the buffer given back last, or nil; cold when its pages were given
// back (they come back, zeroed, as it is written).
func (s *shelf) take() (l *lease, cold bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.free)
	if n == 0 {
		return nil, false
	}
	l = s.free[n-1]
	s.free[n-1], s.free = nil, s.free[:n-1]
	cold, l.cold = l.cold, false
	return l, cold
}

// cool gives back the pages of warm buffers waiting on shelves other than
// class c's, those waiting longest first, until about n bytes are given back:
// what a buffer of class c about to take pages from the system will hold. So
// the system holds about as much as is lent at the busiest, not each size's
// busiest at once: a load that moves from one size to another (or stops, and
// comes back at another size: no collection runs while it is idle) does not
// keep the old size's buffers as well.
func cool(c, n int) {
	for i := range shelves {
		if i == c || n <= 0 {
			continue
		}
		s := &shelves[i]
		s.mu.Lock()
		for _, l := range s.free {
			if n <= 0 {
				break
			}
			if l.mapped && !l.cold {
				l.chill()
				n -= cap(l.buf)
			}
		}
		s.mu.Unlock()
	}
}

func (s *shelf) put(l *lease) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l.idle = collections.Load()
	s.free = append(s.free, l)
}

// trim gives back the pages of the buffers that waited since before the
// collection before the one now counts.
func (s *shelf) trim(now uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	kept := s.free[:0]
	for _, l := range s.free {
		waited := now-l.idle >= 2
		switch {
		case waited && !l.mapped:
			continue // on the Go heap: the collector takes it
		case waited && !l.cold:
			l.chill()
		}
		kept = append(kept, l)
	}
	clear(s.free[len(kept):])
	s.free = kept
}

// newLease maps a buffer of class c. A lease that becomes unreachable while
// lent (its last holder never released it: a handler that panicked) has its
// buffer put back on the shelf, cold, by the collector.
func newLease(c int) *lease {
	buf, mapped := mapBuf(sizeOf(c))
	l := &lease{buf: buf, class: c, mapped: mapped}
	if mapped {
		runtime.AddCleanup(l, reclaim, lost{buf, c})
	}
	return l
}

type lost struct {
	buf   []byte
	class int
}

func reclaim(b lost) {
	l := &lease{buf: b.buf, class: b.class, mapped: true}
	l.chill()
	runtime.AddCleanup(l, reclaim, b)
	shelves[b.class].put(l)
}

// chill gives the buffer's pages back to the system; it reads as zeros after.
func (l *lease) chill() {
	dropPages(l.buf[:cap(l.buf)])
	l.cold = true
}

func init() {
	cycles := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	gcwatch.Register(func() {
		metrics.Read(cycles)
		if cycles[0].Value.Kind() != metrics.KindUint64 {
			return
		}
		now := uint32(cycles[0].Value.Uint64())
		collections.Store(now)
		for i := range shelves {
			shelves[i].trim(now)
		}
	})
}
