//go:build linux

package bytemask

import (
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// guarded is a page between two no one may read or write (mapped for t,
// unmapped after it), with memory faults panicking for the test's length.
func guarded(t *testing.T) []byte {
	t.Helper()
	ps := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 3*ps, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skip("mmap:", err)
	}
	t.Cleanup(func() { _ = syscall.Munmap(mem) })
	for _, guard := range [][]byte{mem[:ps], mem[2*ps:]} {
		if err := syscall.Mprotect(guard, syscall.PROT_NONE); err != nil {
			t.Fatal(err)
		}
	}
	was := debug.SetPanicOnFault(true)
	t.Cleanup(func() { debug.SetPanicOnFault(was) })
	page := mem[ps : 2*ps]
	// The guards work: a read just past the page faults.
	for _, at := range []unsafe.Pointer{unsafe.Add(unsafe.Pointer(&page[ps-1]), 1), unsafe.Add(unsafe.Pointer(&page[0]), -1)} {
		if !faults(func() { guardSink = *(*byte)(at) }) {
			t.Fatal("no fault reading a guard page")
		}
	}
	return page
}

// guardFills are the texts the guard-page tests place against the guards.
func guardFills(ps int) map[string]func(s []byte) {
	text := []byte(strings.Repeat("plain é 漢 😀 \u2028 \"q\"\t\\\n", ps/8))
	ascii := func(s []byte) {
		for i := range s {
			s[i] = 'a'
		}
	}
	return map[string]func(s []byte){
		"ascii": ascii,
		"text":  func(s []byte) { copy(s, text) }, // may cut a character at the end
		"lead last": func(s []byte) {
			copy(s, text)
			s[len(s)-1] = 0xe2
		},
		"continuation first": func(s []byte) {
			copy(s, text)
			s[0] = 0x80
		},
		"separator last": func(s []byte) {
			ascii(s)
			copy(s[max(len(s)-3, 0):], "\u2028")
		},
		"escapes last": func(s []byte) {
			ascii(s)
			copy(s[max(len(s)-2, 0):], "\"\n")
		},
	}
}

// againstGuards calls f with each fill of every length to 300 and a whole
// page, ending where the page ends and starting where it starts, and fails t
// where f faults.
func againstGuards(t *testing.T, f func(t *testing.T, s []byte)) {
	page := guarded(t)
	lengths := []int{len(page)}
	for n := 1; n <= 300; n++ {
		lengths = append(lengths, n)
	}
	for name, fill := range guardFills(len(page)) {
		for _, n := range lengths {
			for _, end := range []bool{true, false} {
				clear(page)
				s := page[:n]
				if end {
					s = page[len(page)-n:]
				}
				fill(s)
				if faults(func() { f(t, s) }) {
					t.Fatalf("%s, %d bytes, at the page's end %v: a read outside the string faulted", name, n, end)
				}
			}
		}
	}
}

// TestCheckTextGuardPages: no read outside the string faults, in either
// form, and the answers are the standard library's.
func TestCheckTextGuardPages(t *testing.T) {
	eachForm(t, func(t *testing.T) { againstGuards(t, holdsToText) })
}

// TestPlainRunGuardPages: PlainRun, from every start it takes, reads
// nothing outside the string, and ends where the block-by-block reading does.
func TestPlainRunGuardPages(t *testing.T) {
	againstGuards(t, func(t *testing.T, s []byte) {
		for i := 3; i+64 <= len(s); i += 7 {
			got, gotEnd := PlainRun(s, i)
			if want, wantEnd := plainRunGo(s, i); avx512 && (got != want || gotEnd != wantEnd) {
				t.Fatalf("from %d: PlainRun %d %v, block by block %d %v", i, got, gotEnd, want, wantEnd)
			}
		}
	})
}

// TestEscapeBlocksGuardPages: EscapeBlocks reads nothing outside the string
// (its last bytes are loaded under a mask) and reads and writes what the
// byte-by-byte escaping does.
func TestEscapeBlocksGuardPages(t *testing.T) {
	if !Escaper {
		t.Skip("EscapeBlocks reads nothing without AVX-512 VBMI2")
	}
	againstGuards(t, func(t *testing.T, s []byte) {
		if valid, sep := wantText(s); valid && !sep { // what EscapeBlocks takes
			sameEscaping(t, s, 2*len(s)+128)
		}
	})
}

// TestEscapeTextGuardPages: EscapeText reads nothing outside the string (its
// last bytes, and the three before each, are loaded under a mask; the first
// block's bytes before are made from the block) and does what
// sameTextEscaping holds it to, valid text or not.
func TestEscapeTextGuardPages(t *testing.T) {
	if !Escaper {
		t.Skip("EscapeText reads nothing without AVX-512 VBMI2")
	}
	againstGuards(t, func(t *testing.T, s []byte) { sameTextEscaping(t, s, 2*len(s)+128) })
}

var guardSink byte

// faults says whether f panicked on a memory fault (SetPanicOnFault on).
func faults(f func()) (faulted bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(interface{ Addr() uintptr }); !ok {
				panic(r)
			}
			faulted = true
		}
	}()
	f()
	return false
}
