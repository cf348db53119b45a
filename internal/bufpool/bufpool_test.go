package bufpool

import (
	"sync"
	"testing"
)

func TestGetLendsTheNextSize(t *testing.T) {
	cases := []struct {
		name   string
		n, cap int
	}{
		{"below MinSize", MinSize - 1, 0},
		{"MinSize", MinSize, MinSize},
		{"just above MinSize", MinSize + 1, 80 << 10},
		{"exactly 80K", 80 << 10, 80 << 10},
		{"just above 80K", 80<<10 + 1, 96 << 10},
		{"just below 512K", 520343, 1 << 19},
		{"just above 512K", 1<<19 + 1, 640 << 10},
		{"590K", 590 << 10, 640 << 10},
		{"MaxSize", MaxSize, MaxSize},
		{"just above MaxSize", MaxSize + 1, 0},
		{"4M", 4 << 20, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := Get(tc.n)
			if got := cap(r.Buf()); got != tc.cap {
				t.Errorf("Get(%d): cap %d, want %d", tc.n, got, tc.cap)
			}
			r.Release()
		})
	}
}

// Every size is lent from the smallest class that holds it, at most a quarter
// larger than asked.
func TestClassesAreTheSmallestThatHold(t *testing.T) {
	if sizeOf(classes-1) != MaxSize {
		t.Fatalf("the last class is %d bytes, not MaxSize", sizeOf(classes-1))
	}
	for n := MinSize; n <= MaxSize; n++ {
		c := classOf(n)
		if sizeOf(c) < n || c > 0 && sizeOf(c-1) >= n || sizeOf(c) > n+n/4 {
			t.Fatalf("%d bytes: class %d of %d bytes (the one below: %d)", n, c, sizeOf(c), sizeOf(max(c-1, 0)))
		}
	}
}

func TestAHoldEndsWithTheLending(t *testing.T) {
	t.Run("held until the last release", func(t *testing.T) {
		r := Get(MinSize)
		if !r.Hold() {
			t.Fatal("a second holder was refused while the first held it")
		}
		r.Release()
		if !r.Hold() {
			t.Fatal("refused while one holder is left")
		}
		r.Release()
		r.Release()
		if r.Hold() {
			t.Fatal("held after every holder let go")
		}
	})
	t.Run("not by a stale ref once lent again", func(t *testing.T) {
		for range 100 { // the pool may or may not hand the same buffer back
			old := Get(MinSize)
			old.Release()
			now := Get(MinSize)
			if old.Hold() {
				t.Fatal("a ref of an earlier lending held the buffer lent again")
			}
			now.Release()
		}
	})
	t.Run("released more than held", func(t *testing.T) {
		r := Get(MinSize)
		r.Release()
		mustPanic(t, r.Release, "a release past zero did not panic")
		if next := Get(MinSize); next.l == r.l && next.gen == r.gen {
			t.Fatal("the release past zero gave the next lending the same generation")
		}
	})
	t.Run("a stale release takes nothing from the next lending", func(t *testing.T) {
		old := Get(MinSize)
		old.Release()
		old.l.state.Store(uint64(old.gen+1)<<32 | 1) // lent again, as Get does (sync.Pool may not hand it back)
		now := Ref{old.l, old.gen + 1}
		mustPanic(t, old.Release, "a stale release did not panic")
		if !now.Hold() {
			t.Fatal("the next lending lost its holder to a stale release")
		}
		now.Release()
		now.Release()
		if now.Hold() {
			t.Fatal("held after its last release")
		}
	})
	t.Run("zero ref", func(t *testing.T) {
		var r Ref
		if !r.Hold() || r.Buf() != nil {
			t.Fatal("the zero Ref should lend nothing and refuse nothing")
		}
		r.Release()
	})
}

// Holders come and go concurrently; the buffer goes back once, after the last.
func TestConcurrentHolders(t *testing.T) {
	for range 200 {
		r := Get(MinSize)
		var wg sync.WaitGroup
		for range 8 {
			if !r.Hold() {
				t.Fatal("refused while held")
			}
			wg.Go(func() { r.Release() })
		}
		wg.Wait()
		if s := r.l.state.Load(); uint32(s) != 1 {
			t.Fatalf("holders left: %d, want 1", uint32(s))
		}
		r.Release()
		if r.Hold() {
			t.Fatal("held after the last release")
		}
	}
}

// mustPanic fails t with msg unless f panics.
func mustPanic(t *testing.T, f func(), msg string) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Fatal(msg)
		}
	}()
	f()
}
