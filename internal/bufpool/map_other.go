//go:build !linux

package bufpool

// mapBuf is a plain slice where buffers are not mapped outside the Go heap.
func mapBuf(n int) ([]byte, bool) { return make([]byte, 0, n), false }

func dropPages([]byte) {}
