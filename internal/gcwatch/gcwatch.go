// Package gcwatch calls functions after garbage collections: a sentinel
// object's cleanup runs once the collector has found it unreachable, calls
// them and sets up the next sentinel. The calls run on the runtime's cleanup
// goroutine, one at a time, shortly after a collection ended: they must be
// short and must not block. Collections that end while they run are not seen
// one by one (a function that needs the count reads /gc/cycles/total).
package gcwatch

import (
	"runtime"
	"sync"
)

var (
	mu      sync.Mutex
	next    int
	watches = map[int]func(){}
	started bool
)

// Register calls f after garbage collections from now on, until the returned
// function is called (a call already under way may still end after it).
func Register(f func()) (unregister func()) {
	mu.Lock()
	defer mu.Unlock()
	id := next
	next++
	watches[id] = f
	if !started {
		started = true
		arm()
	}
	return func() {
		mu.Lock()
		defer mu.Unlock()
		delete(watches, id)
	}
}

type sentinel struct{ _ *byte } // holds a pointer: never in a tiny block, so collected alone

func arm() {
	runtime.AddCleanup(&sentinel{}, func(struct{}) { collected() }, struct{}{})
}

func collected() {
	mu.Lock()
	fs := make([]func(), 0, len(watches))
	for _, f := range watches {
		fs = append(fs, f)
	}
	mu.Unlock()
	for _, f := range fs {
		f()
	}
	arm()
}
