// Package heapfloor keeps the garbage collector from running before the heap
// has grown to a floor. Go's pacer starts a collection when the heap grows by
// GOGC per cent (100) of what the last one left live plus its roots (stacks
// and globals). A gateway keeps little live: with 2–3 MB live it collected
// every few MB of garbage, dozens of times a second under load, and the
// collector was a tenth of its CPU. After each collection the floor sets the
// GC percent so that the next goal is the larger of the floor and Go's own
// goal: a heap that lives large is paced as Go paces it, a small one waits
// until it reaches the floor. A memory limit (GOMEMLIMIT) still bounds the
// heap as Go applies it.
package heapfloor

import (
	"runtime/debug"
	"runtime/metrics"
	"sync"

	"github.com/switchyard/switchyard/internal/gcwatch"
)

// base is Go's default GC percent, kept where its goal is above the floor.
const base = 100

// Heap is what the last collection left: live heap bytes, and the roots
// (stack and global bytes) the pacer adds to them.
type Heap struct{ Live, Roots uint64 }

// Percent is the GC percent whose goal, Live + (Live+Roots) × percent/100 as
// Go's pacer sets it, is the larger of floor and base's goal. Before the first
// collection Live is 0, unknown: base, or the collector would never start.
func Percent(h Heap, floor uint64) int {
	scan := h.Live + h.Roots
	if h.Live == 0 || floor <= h.Live+scan*base/100 {
		return base
	}
	return int(((floor-h.Live)*100 + scan - 1) / scan) // rounded up: the goal is not below the floor
}

// Start keeps the heap's floor at floor bytes until stop is called, which
// gives Go's default pacing back. getenv reads the environment: with GOGC set,
// pacing is the user's and Start does nothing.
func Start(floor int64, getenv func(string) string) (stop func()) {
	if floor <= 0 || getenv("GOGC") != "" {
		return func() {}
	}
	f := &pacer{floor: uint64(floor), sample: []metrics.Sample{
		{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"}}}
	f.pace()
	unregister := gcwatch.Register(f.pace)
	return func() {
		unregister()
		f.mu.Lock()
		defer f.mu.Unlock()
		f.stopped = true
		debug.SetGCPercent(base)
	}
}

type pacer struct {
	floor   uint64
	mu      sync.Mutex
	sample  []metrics.Sample
	stopped bool
}

// pace sets the GC percent from what the last collection left.
func (f *pacer) pace() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return
	}
	metrics.Read(f.sample)
	var v [3]uint64
	for i, s := range f.sample {
		if s.Value.Kind() != metrics.KindUint64 {
			return
		}
		v[i] = s.Value.Uint64()
	}
	// Set each time (a lock of the heap's, once a collection): another
	// gateway in the process (tests) may have stopped and reset it.
	debug.SetGCPercent(Percent(Heap{Live: v[0], Roots: v[1] + v[2]}, f.floor))
}
