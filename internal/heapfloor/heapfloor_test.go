package heapfloor

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"

	"github.com/switchyard/switchyard/internal/testutil"
)

func TestPercentMakesTheGoalTheFloorOrBases(t *testing.T) {
	const mb = 1 << 20
	cases := []struct {
		name  string
		heap  Heap
		floor uint64
		want  int
	}{
		{"small live heap: the goal is the floor", Heap{2 * mb, 0}, 32 * mb, 800},
		{"roots count in the goal", Heap{2 * mb, 6 * mb}, 32 * mb, 375},
		{"half the floor: the floor", Heap{16 * mb, 0}, 32 * mb, 100},
		{"base's goal just above the floor", Heap{22 * mb, 0}, 32 * mb, 50},
		{"base's goal above the floor", Heap{64 * mb, 4 * mb}, 32 * mb, 50},
		{"just under half the floor", Heap{15 * mb, 0}, 32 * mb, 114},
		{"a tiny live heap: held by the minimum", Heap{64 << 10, 0}, 32 * mb, 800},
		{"a floor at Go's minimum: base", Heap{64 << 10, 0}, 4 * mb, 50},
		{"no collection yet (live unknown): base", Heap{0, 1 * mb}, 32 * mb, 50},
		{"a huge floor: no overflow", Heap{1, 0}, math.MaxUint64 / 2, math.MaxInt32},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Percent(tc.heap, tc.floor)
			if got != tc.want {
				t.Fatalf("Percent(%+v, %d) = %d, want %d", tc.heap, tc.floor, got, tc.want)
			}
			if tc.heap.Live == 0 || tc.floor > 1<<40 {
				return
			}
			scan := tc.heap.Live + tc.heap.Roots
			goal := max(tc.heap.Live+scan*uint64(got)/100, minHeap*uint64(got)/100)
			own := max(tc.heap.Live+scan*base/100, minHeap*base/100)
			if goal < tc.floor && goal < own {
				t.Fatalf("goal %d is below the floor %d and base's %d", goal, tc.floor, own)
			}
			if goal > max(tc.floor+scan/50, own) {
				t.Fatalf("goal %d is above both the floor %d and base's %d", goal, tc.floor, own)
			}
		})
	}
}

func read(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func TestTheHeapGoalIsTheFloor(t *testing.T) {
	const floor = 32 << 20
	none := func(string) string { return "" }
	t.Run("the goal reaches the floor, not past it", func(t *testing.T) {
		stop := Start(floor, none)
		defer stop()
		ok := testutil.CollectUntil(func() bool { return read("/gc/heap/goal:bytes") >= floor })
		if goal := read("/gc/heap/goal:bytes"); !ok || goal > floor+floor/8 {
			t.Fatalf("with a %d-byte floor over a test's heap the goal is %d", floor, goal)
		}
	})
	t.Run("the largest floor of several, and the percent there was after the last stop", func(t *testing.T) {
		was := debug.SetGCPercent(150)
		defer debug.SetGCPercent(was)
		small, large := Start(8<<20, none), Start(floor, none)
		if !testutil.CollectUntil(func() bool { return read("/gc/heap/goal:bytes") >= floor }) {
			t.Fatalf("two floors: the goal is %d, want the larger floor", read("/gc/heap/goal:bytes"))
		}
		large()
		large() // twice: nothing more
		if !testutil.CollectUntil(func() bool { return read("/gc/heap/goal:bytes") < floor/2 }) {
			t.Fatalf("after the larger floor stopped the goal is %d", read("/gc/heap/goal:bytes"))
		}
		small()
		if p := read("/gc/gogc:percent"); p != 150 {
			t.Fatalf("after the last stop the GC percent is %d, want the 150 there was", p)
		}
	})
	t.Run("GOGC set: the user's pacing", func(t *testing.T) {
		stop := Start(floor, func(k string) string {
			if k == "GOGC" {
				return "100"
			}
			return ""
		})
		defer stop()
		runtime.GC()
		runtime.GC()
		if p := read("/gc/gogc:percent"); p != 100 {
			t.Fatalf("with GOGC set the GC percent became %d", p)
		}
	})
	t.Run("floor 0: off", func(t *testing.T) {
		stop := Start(0, none)
		defer stop()
		runtime.GC()
		if p := read("/gc/gogc:percent"); p != 100 {
			t.Fatalf("with no floor the GC percent became %d", p)
		}
	})
}
