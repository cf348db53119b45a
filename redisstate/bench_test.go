package redisstate

import (
	"context"
	"testing"

	"github.com/switchyard/switchyard/internal/redistest"
	"github.com/switchyard/switchyard/limits"
)

// BenchmarkAdmitAndDone is one limit check and its release: the embedded
// backend, and Redis on loopback (two EVALSHA round trips).
func BenchmarkAdmitAndDone(b *testing.B) {
	s := redistest.New(b)
	lim := limits.Limits{RPM: 100000000, TPM: 1000000000, MaxConcurrency: 1000}
	c, err := Open(Config{URL: s.URL()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	for _, bc := range []struct {
		name string
		be   limits.Backend
	}{{"embedded", limits.NewMemory()}, {"redis loopback", NewLimits(c)}} {
		b.Run(bc.name, func(b *testing.B) {
			l := limits.New(bc.be, nil)
			for range b.N {
				g, err := l.Admit(context.Background(), "key:bench", lim, 100)
				if err != nil {
					b.Fatal(err)
				}
				_ = g.Done(50)
			}
		})
	}
}
