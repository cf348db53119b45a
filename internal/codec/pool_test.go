package codec

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDirtyPoolSizes: every Get has the length asked for and room for it, and a
// size of a tier gets that tier's capacity, reused or new (sync.Pool may drop
// what was put back, so reuse itself is not asserted).
func TestDirtyPoolSizes(t *testing.T) {
	p := &dirtyPool{}
	for _, n := range []int{0, 1, 4095, 4096, 4097, 65536, 65537, 1 << 24, 1<<24 + 1} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			b := p.Get(n)
			require.Len(t, *b, n)
			require.GreaterOrEqual(t, cap(*b), n)
			p.Put(b)
		})
	}
	b := p.Get(5000)
	(*b)[0] = 7
	p.Put(b)
	again := p.Get(6000) // same tier (8 KiB)
	require.Len(t, *again, 6000)
	require.Equal(t, 8192, cap(*again))
}
