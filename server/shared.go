package server

import (
	"context"
	"time"
)

// BreakerSync shares admin breaker trips and resets with the other replicas
// (package redisstate). Each is called before the change is made here; an error
// refuses the change (it could not reach the other replicas), so that replicas
// never silently disagree.
type BreakerSync interface {
	Trip(ctx context.Context, provider, model string, d time.Duration) error
	Reset(ctx context.Context, provider, model string) error
}

// readyWith adds the shared state's readiness to the server's own.
func readyWith(own func() (bool, string), shared func() (bool, string)) func() (bool, string) {
	if shared == nil {
		return own
	}
	return func() (bool, string) {
		ok, detail := own()
		sok, sdetail := shared()
		return ok && sok, detail + "; state: " + sdetail
	}
}
