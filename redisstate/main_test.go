package redisstate

import (
	"testing"

	"go.uber.org/goleak"
)

// Every subscription, resync loop and connection ends with its client.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
