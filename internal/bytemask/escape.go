package bytemask

import "unsafe"

// EscapeBlocks appends to b the JSON string escaping of s's 64-byte blocks,
// from the first, and of the bytes too few for a block after them, while a
// block holds no control character but \n, \r and \t: a quote, a backslash
// and those three are written \" \\ \n \r \t, every other byte as it is (s
// must be valid UTF-8 without U+2028 or U+2029, which encoding/json escapes).
// It writes within b's capacity only, and only while 128 bytes of it are left
// (a block is stored whole, past what it writes): it never grows b. It returns
// b and how many bytes of s it read: all of them, or where the first block it
// did not write starts (one with another control character, or one b has no
// room left for). s must not lie in b's spare capacity, which it writes past
// what it returns. Without AVX-512 VBMI2 it reads nothing.
func EscapeBlocks(b, s []byte) ([]byte, int) {
	return escapeBlocks(b, s, false)
}

// EscapeText is EscapeBlocks for text not known to be valid UTF-8: each block
// is judged as it is read, in the same pass, and the first that shows a UTF-8
// error or ends U+2028 or U+2029 stops it too, as does a lead byte at the end
// of s with too few bytes after it (it leaves that character's bytes). What it wrote is thus valid
// UTF-8 without U+2028 or U+2029 but for a character that may be cut short at
// its end (CharStart(s, read) is where it starts: its bytes, all of 0x80 and
// above, are written as they are, one for one); all of s is read only when s
// is all valid. Without AVX-512 VBMI2 it reads nothing.
func EscapeText(b, s []byte) ([]byte, int) {
	if n, c := len(s), CharStart(s, len(s)); c < n && n-c < leadLen(s[c]) {
		s = s[:c] // a lead with too few bytes after it: no block shows the error
	}
	return escapeBlocks(b, s, true)
}

// leadLen is how many bytes a character that starts with lead c (0xC0 or
// above) has, as its high bits say (4 for 0xF8 and above, never valid).
func leadLen(c byte) int {
	switch {
	case c >= 0xF0:
		return 4
	case c >= 0xE0:
		return 3
	}
	return 2
}

func escapeBlocks(b, s []byte, check bool) ([]byte, int) {
	if !Escaper || len(s) == 0 || cap(b)-len(b) < 128 {
		return b, 0
	}
	room := b[len(b):cap(b)]
	w, r := escapeBlocks512(unsafe.SliceData(room), len(room), unsafe.SliceData(s), len(s), check)
	return b[:len(b)+w], r
}

// escapeBlocksGo is EscapeBlocks on every machine, with room without end, a
// byte at a time (a block with a control character written \u00XX stops it):
// the oracle of TestEscapeBlocksIsTheBytesReading and FuzzEscapeBlocks.
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
