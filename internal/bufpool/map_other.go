//go:build !linux || race

package bufpool

// mapBuf is a plain slice where buffers are not mapped outside the Go heap
// (other systems, and -race builds, whose detector sees only Go memory).
func mapBuf(n int) ([]byte, bool) { return make([]byte, 0, n), false }

func dropPages([]byte) {}
