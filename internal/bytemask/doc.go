// Package bytemask classifies the bytes of a 64-byte block at once, for the
// JSON string scanners: bit i of each mask is set when byte i of the block is a
// quote, a backslash, a control character (below 0x20) or not ASCII (0x80 and
// above). On amd64 the masks come from SSE2 compares (sixteen bytes per
// instruction); elsewhere, and with the purego build tag, from the same
// arithmetic on eight-byte words (Go). TestBlockMatchesBytes holds both to a
// byte-by-byte reading.
package bytemask

// Masks is what Block says of a 64-byte block.
type Masks struct {
	Quote, Backslash, Control, High uint64
}

// Escaped is the bits of the characters an escape's backslash makes literal:
// in a block that does not start inside an escape, the byte after each
// backslash that ends an odd run of backslashes (the carry trick of simdjson's
// stage one: runs starting on even and on odd bits are told apart with one
// add). A backslash at bit 63 escapes a byte of the next block, not counted.
func Escaped(backslash uint64) uint64 {
	const even = 0x5555555555555555
	follows := backslash << 1
	oddStarts := backslash &^ even &^ follows
	evenRuns := oddStarts + backslash
	return (even ^ evenRuns<<1) & follows
}

// blockGo is Block in Go: each eight-byte word's bytes are compared at once
// (the exact zero-byte test: no false positives) and the high bit of each byte
// gathered into one bit by a multiplication.
func blockGo(p *[64]byte) Masks {
	const ones = 0x0101010101010101
	var m Masks
	for k := 7; k >= 0; k-- {
		o := k * 8
		w := uint64(p[o]) | uint64(p[o+1])<<8 | uint64(p[o+2])<<16 | uint64(p[o+3])<<24 |
			uint64(p[o+4])<<32 | uint64(p[o+5])<<40 | uint64(p[o+6])<<48 | uint64(p[o+7])<<56
		m.Quote = m.Quote<<8 | gather(zeroBytes(w^(ones*'"')))
		m.Backslash = m.Backslash<<8 | gather(zeroBytes(w^(ones*'\\')))
		m.Control = m.Control<<8 | gather(zeroBytes(w&(ones*0xE0)))
		m.High = m.High<<8 | gather(w)
	}
	return m
}

// zeroBytes has the high bit set in exactly the bytes of w that are zero.
func zeroBytes(w uint64) uint64 {
	const low7 = 0x7F7F7F7F7F7F7F7F
	return ^((w&low7 + low7) | w | low7)
}

// gather packs the high bits of w's eight bytes into the eight low bits.
func gather(w uint64) uint64 {
	return (w & 0x8080808080808080 >> 7) * 0x0102040810204080 >> 56
}
