package openai_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Streams run timers and the HTTP transport runs connection goroutines: none may
// outlive the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
