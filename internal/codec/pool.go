package codec

import (
	"math/bits"
	"sync"

	"google.golang.org/grpc/mem"
)

// dirtyPool is a mem.BufferPool whose buffers are not cleared when handed out:
// each one's user writes every byte it reads. grpc-go's pools clear each buffer
// they hand out, which for a 512 KB message cost 4 % of the call, once for the
// frames it arrived in and again for the buffer Unmarshal gathers them into.
// Sizes are powers of two from 4 KiB to 16 MiB; others are allocated and
// dropped.
type dirtyPool struct {
	tiers [maxTier - minTier + 1]sync.Pool
}

const minTier, maxTier = 12, 24

var gatherPool = &dirtyPool{}

// Buffers is the pool the gRPC server reads messages into (grpc-go's
// experimental.BufferPool): data frames, read whole into the buffers it takes
// (an HTTP/2 frame is read with io.ReadFull, a compacted backlog copied in
// whole), and the gathering of a message that crosses frames. A buffer above
// 16 KiB is at most twice what it holds (grpc-go's default tiers jump from 32
// KiB to 1 MiB).
var Buffers mem.BufferPool = gatherPool

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
