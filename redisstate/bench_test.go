package redisstate

import (
	"context"
	"testing"

	"github.com/switchyard/switchyard/internal/redistest"
	"github.com/switchyard/switchyard/limits"
)

// BenchmarkAdmitAndDone is one limit check and its release: the embedded
// backend, and Redis on loopback: rpm+tpm+max_concurrency with a token correction
// (two EVALSHA round trips), rpm only (one: nothing to release).
func BenchmarkAdmitAndDone(b *testing.B) {
	s := redistest.New(b)
	lim := limits.Limits{RPM: 100000000, TPM: 1000000000, MaxConcurrency: 1000}
	c, err := Open(Config{URL: s.URL()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	rpmOnly := limits.Limits{RPM: 100000000}
	for _, bc := range []struct {
		name string
		be   limits.Backend
		lim  limits.Limits
		used int
	}{
		{"embedded", limits.NewMemory(), lim, 50},
		{"redis loopback", NewLimits(c), lim, 50},
		{"redis loopback rpm only", NewLimits(c), rpmOnly, 0},
	} {
		b.Run(bc.name, func(b *testing.B) {
			l := limits.New(bc.be, nil)
			for range b.N {
				g, err := l.Admit(context.Background(), "key:bench", bc.lim, 100)
				if err != nil {
					b.Fatal(err)
				}
				_ = g.Done(bc.used)
			}
		})
	}
}
