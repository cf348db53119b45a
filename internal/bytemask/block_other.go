//go:build !amd64 || purego

package bytemask

// Fast says Block is faster than reading the bytes eight at a time: not here
// (its Go arithmetic costs more than the scanners' own eight-byte loops).
const Fast = false

// Block classifies the 64 bytes at p.
func Block(p *[64]byte) Masks { return blockGo(p) }
