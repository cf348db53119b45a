package bytemask

import "math/bits"

// PlainRun is how far from s[i] a JSON string's text runs in 64-byte blocks
// that hold nothing a string scanner must look at closer: no quote that is not
// escaped, no control character, no escape but the two-byte ones (\" \\ \/ \b
// \f \n \r \t), no UTF-8 error (judged, as LoadText does, with the three bytes
// before each block). s[i] must not be inside an escape, and i must be 3 or
// more. It returns the start of the first block that is not plain, or of the
// last bytes too few for a block (less one when the byte before it is a
// backslash escaping its first: a scanner goes on from that backslash); i
// itself when none is plain or the machine lacks AVX-512 (a scanner then
// reads block by block, as before). When that first block is plain up to a
// closing quote (no UTF-8 error before it nor at it), it returns the end of
// the string instead, past the quote, and end is true.
func PlainRun(s []byte, i int) (next int, end bool) {
	if !avx512 || i < 3 || i+64 > len(s) {
		return i, false
	}
	n, end := plainBlocks512(&s[i], len(s)-i)
	return i + n, end
}

// plainRunGo is PlainRun from textBlockGo and escapedAfter, block by block on
// every machine: the oracle of TestPlainRunIsTheBlocksReading and FuzzPlainRun.
func plainRunGo(s []byte, i int) (next int, end bool) {
	var carry uint64
	for i >= 3 && i+64 <= len(s) {
		m := textBlockGo((*[67]byte)(s[i-3 : i+64]))
		esc, out := escapedAfter(m.Backslash, carry)
		if m.Quote&^esc|m.Control|esc&^m.EscapeChar|m.Invalid == 0 {
			carry = out
			i += 64
			continue
		}
		if quotes := m.Quote &^ esc; quotes != 0 {
			before := quotes&-quotes - 1
			if (m.Control|esc&^m.EscapeChar)&before|m.Invalid&(before<<1|1) == 0 {
				return i + bits.TrailingZeros64(quotes) + 1, true
			}
		}
		break
	}
	return i - int(carry), false
}

// escapedAfter is Escaped for a block whose first byte a backslash ending the
// block before escapes when carry is 1 (simdjson's find_escaped): it returns
// the escaped bits and whether the block's own last backslash escapes the next
// block's first byte.
func escapedAfter(backslash, carry uint64) (escaped, next uint64) {
	const even = 0x5555555555555555
	backslash &^= carry
	follows := backslash<<1 | carry
	oddStarts := backslash &^ even &^ follows
	evenRuns, next := bits.Add64(oddStarts, backslash, 0)
	return (even ^ evenRuns<<1) & follows, next
}
