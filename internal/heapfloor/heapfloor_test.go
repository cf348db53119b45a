package heapfloor

import (
	"runtime"
	"runtime/metrics"
	"testing"
)

func TestPercentMakesTheGoalTheFloorOrGosOwn(t *testing.T) {
	const mb = 1 << 20
	cases := []struct {
		name  string
		heap  Heap
		floor uint64
		want  int
	}{
		{"small live heap: the goal is the floor", Heap{2 * mb, 0}, 32 * mb, 1500},
		{"roots count in the goal", Heap{2 * mb, 2 * mb}, 32 * mb, 750},
		{"Go's own goal at the floor", Heap{16 * mb, 0}, 32 * mb, 100},
		{"Go's own goal above the floor", Heap{64 * mb, 4 * mb}, 32 * mb, 100},
		{"just under half the floor", Heap{15 * mb, 0}, 32 * mb, 114},
		{"a tiny live heap: the goal is still the floor", Heap{64 << 10, 0}, 32 * mb, 51100},
		{"no collection yet (live unknown): Go's own goal", Heap{0, 1 * mb}, 32 * mb, 100},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Percent(tc.heap, tc.floor)
			if got != tc.want {
				t.Fatalf("Percent(%+v, %d) = %d, want %d", tc.heap, tc.floor, got, tc.want)
			}
			if tc.heap.Live == 0 {
				return
			}
			scan := tc.heap.Live + tc.heap.Roots
			goal, own := tc.heap.Live+scan*uint64(got)/100, tc.heap.Live+scan
			if goal < tc.floor && goal < own {
				t.Fatalf("goal %d is below the floor %d and Go's own %d", goal, tc.floor, own)
			}
			if goal > max(tc.floor+scan/100, own) {
				t.Fatalf("goal %d is above both the floor %d and Go's own %d", goal, tc.floor, own)
			}
		})
	}
}

func gcPercent() uint64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func TestStartPacesTheCollectorAndStopGivesGoItsPacingBack(t *testing.T) {
	t.Run("the floor sets the percent after collections", func(t *testing.T) {
		stop := Start(1<<30, func(string) string { return "" })
		runtime.GC()
		raised := false
		for range 50 {
			if gcPercent() > 100 {
				raised = true
				break
			}
			runtime.GC()
		}
		stop()
		if !raised {
			t.Fatalf("a 1 GiB floor over a test's heap left the GC percent at %d", gcPercent())
		}
		if p := gcPercent(); p != 100 {
			t.Fatalf("after stop the GC percent is %d, want Go's 100", p)
		}
	})
	t.Run("GOGC set: the user's pacing", func(t *testing.T) {
		stop := Start(1<<30, func(k string) string {
			if k == "GOGC" {
				return "100"
			}
			return ""
		})
		defer stop()
		runtime.GC()
		runtime.GC()
		if p := gcPercent(); p != 100 {
			t.Fatalf("with GOGC set the GC percent became %d", p)
		}
	})
	t.Run("floor 0: off", func(t *testing.T) {
		stop := Start(0, func(string) string { return "" })
		defer stop()
		runtime.GC()
		if p := gcPercent(); p != 100 {
			t.Fatalf("with no floor the GC percent became %d", p)
		}
	})
}
