// Package heapfloor keeps the garbage collector from running before the heap
// has grown to a floor. Go's pacer starts a collection when the heap grows by
// GOGC per cent (100) of what the last one left live plus its roots (stacks
// and globals), and never before a minimum of 4 MiB × GOGC/100. A gateway keeps
// little live: with 2–3 MB live it collected every few MB of garbage, dozens
// of times a second under load, and the collector was a tenth of its CPU.
// After each collection the floor sets the GC percent so that the next goal is
// the larger of the floor and base's goal: a small heap waits until it
// reaches the floor, a heap that lives large is collected when it has grown by
// half of what lives (GOGC=50, not Go's 100). What lives large in Switchyard is
// the bytes of requests in flight (gRPC frames), which the collector does not
// scan: collecting more often costs little there, and the process holds 1.5×
// what lives instead of 2× (512 KB gRPC prompts, 32 in flight: 81–92 → 73–74
// MB). A memory limit (GOMEMLIMIT) still bounds the heap as Go applies it.
package heapfloor

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
	"sync"

	"github.com/switchyard/switchyard/internal/gcwatch"
)

// base is the GC percent where its goal is above the floor.
const base = 50

// minHeap is Go's minimum heap goal at GOGC=100; at percent p it is
// minHeap × p/100 (runtime: heapMinimum).
const minHeap = 4 << 20

// Heap is what the last collection left: live heap bytes, and the roots
// (stack and global bytes) the pacer adds to them.
type Heap struct{ Live, Roots uint64 }

// Percent is the GC percent whose goal is the larger of floor and base's own:
// Go's goal is Live + (Live+Roots) × percent/100, and at least minHeap ×
// percent/100, so the percent is also held where that minimum is the floor.
// Before the first collection Live is 0, unknown: base.
func Percent(h Heap, floor uint64) int {
	scan := h.Live + h.Roots
	if h.Live == 0 || floor <= h.Live+scan*base/100 || floor <= minHeap {
		return base
	}
	limit := min(floor/(minHeap/100), math.MaxInt32)
	q, rem := (floor-h.Live)/scan, (floor-h.Live)%scan
	if q >= limit/100 {
		return int(limit)
	}
	p := q*100 + uint64(math.Ceil(float64(rem)*100/float64(scan))) // rounded up: the goal is not below the floor
	return int(max(min(p, limit), base))
}

var (
	mu      sync.Mutex
	floors  = map[int]uint64{} // by Start call: the largest is kept
	next    int
	before  int // the percent before the first Start
	stopGC  func()
	samples = []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"}}
)

// Start keeps the heap's floor at floor bytes until stop is called. Several
// may run at once (gateways in one process): the largest floor is kept, and
// the last stop gives back the percent there was before the first Start.
// getenv reads the environment: with GOGC set, pacing is the user's and Start
// does nothing.
func Start(floor int64, getenv func(string) string) (stop func()) {
	if floor <= 0 || getenv("GOGC") != "" {
		return func() {}
	}
	mu.Lock()
	defer mu.Unlock()
	id := next
	next++
	floors[id] = uint64(floor)
	if len(floors) == 1 {
		before = debug.SetGCPercent(base)
		stopGC = gcwatch.Register(pace)
	}
	paceLocked()
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			defer mu.Unlock()
			delete(floors, id)
			if len(floors) == 0 {
				stopGC()
				debug.SetGCPercent(before)
			}
		})
	}
}

// pace sets the GC percent from what the last collection left.
func pace() {
	mu.Lock()
	defer mu.Unlock()
	paceLocked()
}

func paceLocked() {
	var floor uint64
	for _, f := range floors {
		floor = max(floor, f)
	}
	if floor == 0 {
		return // stopped while this call waited
	}
	metrics.Read(samples)
	var v [3]uint64
	for i, s := range samples {
		if s.Value.Kind() != metrics.KindUint64 {
			return
		}
		v[i] = s.Value.Uint64()
	}
	debug.SetGCPercent(Percent(Heap{Live: v[0], Roots: v[1] + v[2]}, floor))
}
