package testutil

import "runtime"

// CollectUntil runs garbage collections until done says so, at most 50, and
// gives done's last word: for what happens after a collection (cleanups, the
// functions gcwatch calls), which runs on the runtime's own goroutine.
func CollectUntil(done func() bool) bool {
	for range 50 {
		runtime.GC()
		for range 10 {
			if done() {
				return true
			}
			runtime.Gosched()
		}
	}
	return done()
}
