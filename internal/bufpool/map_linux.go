//go:build linux && !race

package bufpool

import "syscall"

// mapBuf is a buffer of n bytes (len 0) outside the Go heap; false when the
// mapping failed and it is a plain slice. Not under -race: the race detector
// sees only Go memory, and a read of a buffer after its release is what it
// must catch here.
func mapBuf(n int) ([]byte, bool) {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return make([]byte, 0, n), false
	}
	return b[:0], true
}

// dropPages gives b's pages back to the system; b reads as zeros after it.
func dropPages(b []byte) { _ = syscall.Madvise(b, syscall.MADV_DONTNEED) }
