package codec

import (
	"math/bits"
	"sync"
)

// dirtyPool is a mem.BufferPool whose buffers are not cleared when handed out:
// Unmarshal gathers a received message into one with a copy that overwrites
// every byte of it (grpc-go's default pool clears each buffer it hands out, which
// for a 512 KB message cost 4 % of the call). Sizes are powers of two from 4 KiB
// to 16 MiB; others are allocated and dropped.
type dirtyPool struct {
	tiers [maxTier - minTier + 1]sync.Pool
}

const minTier, maxTier = 12, 24

var gatherPool = &dirtyPool{}

func tierOf(n int) int {
	if n <= 1<<minTier {
		return minTier
	}
	return bits.Len(uint(n - 1))
}

func (p *dirtyPool) Get(n int) *[]byte {
	t := tierOf(n)
	if t > maxTier {
		b := make([]byte, n)
		return &b
	}
	if b, ok := p.tiers[t-minTier].Get().(*[]byte); ok {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, 1<<t)
	return &b
}

func (p *dirtyPool) Put(b *[]byte) {
	c := cap(*b)
	if c < 1<<minTier || c > 1<<maxTier || c&(c-1) != 0 {
		return
	}
	p.tiers[bits.Len(uint(c))-1-minTier].Put(b)
}
