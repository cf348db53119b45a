package bytemask

import (
	"bytes"
	"unicode/utf8"
	"unsafe"
)

// UTF-8 validity a block at a time: the lookup algorithm of Keiser and Lemire
// ("Validating UTF-8 in less than one instruction per byte", 2021), as
// simdjson's stage one runs it. Each byte is judged with the three before it:
// three nibble tables say, of the pair (previous byte, this byte), which errors
// the pair can be part of (a lead without its continuation, a continuation
// without its lead, an overlong form, a surrogate, a character above
// U+10FFFF), and the two bytes before those say whether this byte must be the
// third or fourth of a character. A string is valid UTF-8 exactly when no byte
// of it, nor the ASCII byte after it, has an error: an error shows at the
// latest on the first byte after the character it spoils.

// The errors a pair of bytes can show (bit 6 is both a 4-byte overlong form
// and a too-large character starting 0x80: the first byte tells them apart).
const (
	tooShort  = 1 << 0 // a lead, then ASCII or another lead
	tooLong   = 1 << 1 // ASCII, then a continuation
	overlong3 = 1 << 2 // 0xE0, then 0x80-0x9F
	tooLarge  = 1 << 3 // 0xF4, then 0x90 and above; 0xF5 and above
	surrogate = 1 << 4 // 0xED, then 0xA0-0xBF
	overlong2 = 1 << 5 // 0xC0 or 0xC1, then a continuation
	large1000 = 1 << 6 // 0xF5 and above, then 0x80-0x8F; 0xF0, then 0x80-0x8F
	twoConts  = 1 << 7 // a continuation, then a continuation

	carry = tooShort | tooLong | twoConts // errors the first byte's low nibble does not tell
)

// firstHigh, firstLow and secondHigh are the errors by the first byte's high
// nibble, its low nibble and the second byte's high nibble.
var (
	firstHigh = [16]byte{
		tooLong, tooLong, tooLong, tooLong, tooLong, tooLong, tooLong, tooLong, // ASCII
		twoConts, twoConts, twoConts, twoConts, // a continuation
		tooShort | overlong2,             // 0xC_
		tooShort,                         // 0xD_
		tooShort | overlong3 | surrogate, // 0xE_
		tooShort | tooLarge | large1000,  // 0xF_
	}
	firstLow = [16]byte{
		carry | overlong3 | overlong2 | large1000, // _0
		carry | overlong2,                         // _1
		carry, carry,
		carry | tooLarge, // _4
		carry | tooLarge | large1000, carry | tooLarge | large1000, carry | tooLarge | large1000,
		carry | tooLarge | large1000, carry | tooLarge | large1000, carry | tooLarge | large1000,
		carry | tooLarge | large1000, carry | tooLarge | large1000,
		carry | tooLarge | large1000 | surrogate, // _D
		carry | tooLarge | large1000, carry | tooLarge | large1000,
	}
	secondHigh = [16]byte{
		tooShort, tooShort, tooShort, tooShort, tooShort, tooShort, tooShort, tooShort, // ASCII
		tooLong | overlong2 | twoConts | overlong3 | large1000, // 0x8_
		tooLong | overlong2 | twoConts | overlong3 | tooLarge,  // 0x9_
		tooLong | overlong2 | twoConts | surrogate | tooLarge,  // 0xA_
		tooLong | overlong2 | twoConts | surrogate | tooLarge,  // 0xB_
		tooShort, tooShort, tooShort, tooShort, // a lead
	}
)

// invalidAt says whether byte b, after p3, p2 and p1 (p1 just before it), shows
// a UTF-8 error.
func invalidAt(p3, p2, p1, b byte) bool {
	special := firstHigh[p1>>4] & firstLow[p1&15] & secondHigh[b>>4]
	var must byte // b must be a third or fourth byte
	if p2 >= 0xE0 || p3 >= 0xF0 {
		must = 0x80
	}
	return special^must != 0
}

// invalidGo is the Invalid mask of the 64 bytes at w[3:], w[:3] the bytes before them.
func invalidGo(w *[67]byte) uint64 {
	var m uint64
	for i := range 64 {
		if invalidAt(w[i], w[i+1], w[i+2], w[i+3]) {
			m |= 1 << i
		}
	}
	return m
}

// CheckText says whether s is valid UTF-8 and, when it is, whether it holds
// U+2028 or U+2029 (JSON encoders escape those two). Where Fast, s is read 64
// bytes at a time: its whole blocks, then its last 64 bytes as one more block
// (judged with the 32 before them; bytes read twice are judged the same), and
// a character its last bytes leave unfinished is an error no block sees.
func CheckText(s []byte) (valid, lineSep bool) {
	if Fast && len(s) >= 96 {
		n := len(s) &^ 63
		p := unsafe.SliceData(s)
		if valid, lineSep = utf8Run(p, n>>6, nil); valid && n < len(s) {
			var sep bool
			valid, sep = utf8Run(&s[len(s)-64], 1, &s[len(s)-96])
			lineSep = lineSep || sep
		}
		if !valid || unfinished(s) {
			return false, false
		}
		return true, lineSep
	}
	n := 0
	if Fast && len(s) >= 64 {
		n = len(s) &^ 63
		if valid, lineSep = utf8Run(unsafe.SliceData(s), n>>6, nil); !valid {
			return false, false
		}
		n = CharStart(s, n)
	}
	if !utf8.Valid(s[n:]) {
		return false, false
	}
	return true, lineSep || hasLineSep(s[max(n-2, 0):])
}

// utf8Run is utf8Blocks, in AVX-512 where the machine has it (one register a
// block, utf8Blocks512) but for a first block with nothing before it, which
// utf8Blocks reads (utf8Blocks512 reads the three bytes before each block, and
// reading before a string may touch a page a masked load would pay an assist
// for); before is nil or p less 32 bytes.
func utf8Run(p *byte, blocks int, before *byte) (valid, lineSep bool) {
	if !avx512 || blocks < 2 {
		return utf8Blocks(p, blocks, before)
	}
	if before == nil {
		if valid, lineSep = utf8Blocks(p, 1, nil); !valid {
			return false, false
		}
		p, blocks = (*byte)(unsafe.Add(unsafe.Pointer(p), 64)), blocks-1
	}
	valid, sep := utf8Blocks512(p, blocks)
	return valid, lineSep || sep
}

// unfinished says whether s (of three bytes or more) ends inside a character:
// a lead of two bytes or more last, of three or more second to last, or of
// four third to last.
func unfinished(s []byte) bool {
	n := len(s)
	return s[n-1] >= 0xC0 || s[n-2] >= 0xE0 || s[n-3] >= 0xF0
}

// hasLineSep is CheckText's lineSep, from one 0xE2 to the next.
func hasLineSep(s []byte) bool {
	for {
		i := bytes.IndexByte(s, 0xE2)
		if i < 0 || i+2 >= len(s) {
			return false
		}
		if s[i+1] == 0x80 && s[i+2]&0xFE == 0xA8 {
			return true
		}
		s = s[i+1:]
	}
}

// CharStart is where to go on reading one byte at a time after blocks ended
// at i: the lead byte of the last character that starts in s[i-3:i] (it may
// end at s[i] or after it, and a block judges a byte only with the bytes
// after it; a character that ended before i is only read again), else i.
func CharStart(s []byte, i int) int {
	for j := i - 1; j >= 0 && j >= i-3 && s[j] >= utf8.RuneSelf; j-- {
		if s[j] >= 0xC0 {
			return j
		}
	}
	return i
}
