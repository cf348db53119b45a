package bytemask

import (
	"slices"
	"unsafe"
)

// EscapeBlocks appends to b the JSON string escaping of s's 64-byte blocks,
// from the first, and of the bytes too few for a block after them, while a
// block holds no control character but \n, \r and \t:
// a quote, a backslash and those three are written \" \\ \n \r \t, every other
// byte as it is (s must be valid UTF-8 without U+2028 or U+2029, which
// encoding/json escapes). It returns b and how many bytes of s it read: all of
// them, or where the first block it did not write starts (one with another
// control character). Without AVX-512 VBMI2 it reads nothing.
func EscapeBlocks(b, s []byte) ([]byte, int) {
	if !Escaper {
		return b, 0
	}
	read := 0
	for read < len(s) {
		if cap(b)-len(b) < 128 {
			b = slices.Grow(b, len(s)-read+len(s)>>3+128)
		}
		room := b[len(b):cap(b)]
		w, r := escapeBlocks512(unsafe.SliceData(room), len(room), &s[read], len(s)-read)
		b, read = b[:len(b)+w], read+r
		if r == 0 || read < len(s) && cap(b)-len(b) >= 128 {
			break // a block with another control character
		}
	}
	return b, read
}

// escapeBlocksGo is EscapeBlocks on every machine, a byte at a time (a block
// with a control character written \u00XX stops it): the
// oracle of TestEscapeBlocksIsTheBytesReading and FuzzEscapeBlocks.
func escapeBlocksGo(b, s []byte) ([]byte, int) {
	read := 0
	for read < len(s) {
		block := s[read:min(read+64, len(s))]
		for _, c := range block {
			if c < 0x20 && c != '\n' && c != '\r' && c != '\t' {
				return b, read
			}
		}
		for _, c := range block {
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, c)
			}
		}
		read += len(block)
	}
	return b, read
}
