//go:build linux

package bytemask

import (
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// TestCheckTextGuardPages: a string that ends where a page ends, before a
// page no one may read, or that starts where a page starts, after one: no
// read outside the string faults, in either form, for every length to 300
// and a whole page.
func TestCheckTextGuardPages(t *testing.T) { eachForm(t, checkTextGuardPages) }

func checkTextGuardPages(t *testing.T) {
	ps := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 3*ps, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skip("mmap:", err)
	}
	defer syscall.Munmap(mem)
	if err := syscall.Mprotect(mem[:ps], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mprotect(mem[2*ps:], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	page := mem[ps : 2*ps]
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))

	// The guards work: a read just past the page faults.
	for _, at := range []unsafe.Pointer{unsafe.Add(unsafe.Pointer(&page[ps-1]), 1), unsafe.Add(unsafe.Pointer(&page[0]), -1)} {
		if !faults(func() { guardSink = *(*byte)(at) }) {
			t.Fatal("no fault reading a guard page")
		}
	}

	text := []byte(strings.Repeat("plain é 漢 😀 \u2028 ", ps/8))
	fills := map[string]func(s []byte){
		"ascii": func(s []byte) {
			for i := range s {
				s[i] = 'a'
			}
		},
		"text": func(s []byte) { copy(s, text) }, // may cut a character at the end
		"lead last": func(s []byte) {
			copy(s, text)
			s[len(s)-1] = 0xe2
		},
		"continuation first": func(s []byte) {
			copy(s, text)
			s[0] = 0x80
		},
		"separator last": func(s []byte) {
			for i := range s {
				s[i] = 'a'
			}
			copy(s[max(len(s)-3, 0):], "\u2028")
		},
	}
	lengths := []int{ps}
	for n := 1; n <= 300; n++ {
		lengths = append(lengths, n)
	}
	for name, fill := range fills {
		for _, n := range lengths {
			for _, where := range []string{"ends at the page end", "starts at the page start"} {
				clear(page)
				s := page[:n]
				if where == "ends at the page end" {
					s = page[ps-n:]
				}
				fill(s)
				if faults(func() { _, _ = CheckText(s) }) {
					t.Fatalf("%s, %d bytes, %s: CheckText faulted", name, n, where)
				}
				holdsToText(t, s)
			}
		}
	}
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
