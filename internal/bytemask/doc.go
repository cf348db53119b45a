// Package bytemask classifies the bytes of a 64-byte block at once, for the
// JSON string scanners: bit i of each mask is set when byte i of the block is a
// quote, a backslash, a control character (below 0x20), not ASCII (0x80 and
// above), one of the characters of a two-byte escape (" \ / b f n r t) or a
// 'u'; LoadText also marks where UTF-8 goes wrong. On amd64 with AVX2 the
// masks come from 32-byte compares and nibble table lookups (block_amd64.s;
// Fast is true; TextBlock also in AVX-512 where the machine has it);
// elsewhere the bytes are read one by one (blockGo and textBlockGo, the
// oracles of TestTextBlockMatchesBytes and TestStopsMatchBytes), slower than
// the scanners' own eight-byte loops, which they use instead.
package bytemask

import "unsafe"

// Masks is what LoadText says of a 64-byte block.
type Masks struct {
	Quote, Backslash, Control, High uint64
	// EscapeChar and U mark the bytes that may follow a backslash: those of a
	// two-byte escape, and the u of \uXXXX.
	EscapeChar, U uint64
	// Invalid marks the bytes that show a UTF-8 error (utf8.go), judged with
	// the three bytes before the block.
	Invalid uint64
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

// LoadText sets m to the masks of the 64 bytes at w[3:], Invalid included:
// w[:3] are the three bytes before them (ASCII when there are none). (m is
// filled in place: a Masks returned by value is copied sixteen bytes at a time
// from the eight-byte stores that wrote it, and the stalled loads cost more
// than the compares.)
func (m *Masks) LoadText(w *[67]byte) {
	if Fast {
		TextBlock(w, m)
		return
	}
	*m = textBlockGo(w)
}

// Stops is the bits of the 64 bytes at p a JSON string encoder stops at: the
// quotes, backslashes and control characters (special), and the bytes of 0x80
// and above (high).
func Stops(p *[64]byte) (special, high uint64) {
	if Fast {
		return stopsBlock(p)
	}
	return stopsGo(p)
}

// Specials sets out[k] to the special bits Stops gives of the k-th block of
// 64 bytes of p, for every k of out (p holds 64 bytes for each).
func Specials(p []byte, out []uint64) {
	if len(p) < len(out)<<6 {
		panic("bytemask: Specials past the end of p")
	}
	if Fast && len(out) > 0 {
		specialBlocks(unsafe.SliceData(p), len(out), unsafe.SliceData(out))
		return
	}
	specialsGo(p, out)
}

// blockGo is LoadText one byte at a time, Invalid aside.
func blockGo(p *[64]byte) Masks {
	var m Masks
	for i, b := range p {
		bit := uint64(1) << i
		switch {
		case b == '"':
			m.Quote |= bit
			m.EscapeChar |= bit
		case b == '\\':
			m.Backslash |= bit
			m.EscapeChar |= bit
		case b < 0x20:
			m.Control |= bit
		case b >= 0x80:
			m.High |= bit
		case b == '/' || b == 'b' || b == 'f' || b == 'n' || b == 'r' || b == 't':
			m.EscapeChar |= bit
		case b == 'u':
			m.U |= bit
		}
	}
	return m
}

// textBlockGo is LoadText one byte at a time.
func textBlockGo(w *[67]byte) Masks {
	m := blockGo((*[64]byte)(w[3:]))
	m.Invalid = invalidGo(w)
	return m
}

// stopsGo is Stops one byte at a time.
func stopsGo(p *[64]byte) (special, high uint64) {
	m := blockGo(p)
	return m.Quote | m.Backslash | m.Control, m.High
}

// specialsGo is Specials one block at a time.
func specialsGo(p []byte, out []uint64) {
	for k := range out {
		out[k], _ = stopsGo((*[64]byte)(p[k<<6:]))
	}
}
