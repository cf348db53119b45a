package gcwatch

import (
	"sync/atomic"
	"testing"

	"github.com/switchyard/switchyard/internal/testutil"
)

func TestRegisteredFunctionsRunAfterCollections(t *testing.T) {
	var a, b atomic.Int32
	stopA := Register(func() { a.Add(1) })
	stopB := Register(func() { b.Add(1) })
	defer stopB()
	if !testutil.CollectUntil(func() bool { return a.Load() >= 2 && b.Load() >= 2 }) {
		t.Fatalf("after 50 collections: %d and %d calls, want 2 each at least", a.Load(), b.Load())
	}
	stopA()
	// A call under way when stopA returned may still end; none starts after it.
	if !testutil.CollectUntil(func() bool { return b.Load() >= 4 }) {
		t.Fatal("the other registration stopped being called")
	}
	was := a.Load()
	if !testutil.CollectUntil(func() bool { return b.Load() >= 6 }) || a.Load() > was+1 {
		t.Fatalf("an unregistered function was called %d more times", a.Load()-was)
	}
}
