package codec

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDirtyPoolSizes: every Get has the length asked for and room for it, and a
// buffer put back is handed out again for a size of its tier.
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
	again := p.Get(6000) // same tier (8 KiB): usually the same buffer, never cleared
	require.Len(t, *again, 6000)
	require.Equal(t, 8192, cap(*again))
}
