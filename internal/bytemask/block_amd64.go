//go:build !purego

package bytemask

// Fast says Block is the SSE2 one: faster than reading the bytes eight at a
// time (the Go Block is not).
const Fast = true

// Block classifies the 64 bytes at p (SSE2, block_amd64.s).
func Block(p *[64]byte) Masks {
	var m Masks
	block(p, &m)
	return m
}

//go:noescape
func block(p *[64]byte, m *Masks)
