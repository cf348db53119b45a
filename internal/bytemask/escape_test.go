package bytemask

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// escapeCases are valid UTF-8 texts without U+2028 or U+2029, with each thing
// EscapeBlocks escapes or stops at placed across the blocks' edges.
func escapeCases() map[string][]byte {
	prose := strings.Repeat("The gateway forwards each request; Café, naïve, 漢字, ✓ 😀. ", 40)
	dense := strings.Repeat("line \"one\"\n\tpath C:\\dir\\x\r\n", 60)
	return map[string][]byte{
		"prose":                   []byte(prose),
		"dense escapes":           []byte(dense),
		"all quotes":              bytes.Repeat([]byte{'"'}, 640),
		"all backslashes":         bytes.Repeat([]byte{'\\'}, 640),
		"all newlines":            bytes.Repeat([]byte{'\n'}, 640),
		"escapes in one half":     []byte(strings.Repeat(strings.Repeat("a", 32)+strings.Repeat(`"`, 32), 10)),
		"a control character":     insertAt(dense, 700, "\x01"),
		"a backspace":             insertAt(prose, 130, "\b"),
		"a form feed at an edge":  insertAt(prose, 128, "\f"),
		"a nul in the first":      insertAt(dense, 0, "\x00"),
		"a unit separator":        insertAt(dense, 1000, "\x1f"),
		"delete is not a control": []byte(strings.Repeat("x\x7f\"", 300)),
		"less than a block":       []byte(dense[:63]),
		"a control in the last":   insertAt(dense[:1000], 990, "\x02"),
		"a tab at the very end":   []byte(dense[:129] + "\t"),
		"empty":                   nil,
	}
}

// TestEscapeBlocksIsTheBytesReading: EscapeBlocks writes and reads what the
// byte-by-byte reading does, in every case, after what b held, whatever room
// b has (it stops where the room runs out).
func TestEscapeBlocksIsTheBytesReading(t *testing.T) {
	if !Escaper {
		t.Skip("EscapeBlocks reads nothing without AVX-512 VBMI2")
	}
	for name, s := range escapeCases() {
		t.Run(name, func(t *testing.T) {
			for _, room := range []int{0, 1, 127, 128, 200, len(s), 2*len(s) + 128} {
				sameEscaping(t, s, room)
			}
		})
	}
}

// sameEscaping holds EscapeBlocks to escapeBlocksGo on s, after a prefix, with
// room bytes of capacity past it: it reads what the bytes' reading reads,
// less where the room ran out (then less than 128 bytes of it are left), and
// writes what the bytes' reading writes of what it read, never past b's
// capacity.
func sameEscaping(t *testing.T, s []byte, room int) {
	t.Helper()
	whole := bytes.Repeat([]byte{0xAA}, 3+room+256) // what lies past b's capacity must stay as it is
	b := whole[: 3 : 3+room]
	copy(b, "ab\"")
	got, gotRead := EscapeBlocks(b, s)
	if past := whole[3+room:]; !bytes.Equal(past, bytes.Repeat([]byte{0xAA}, len(past))) {
		t.Fatalf("room %d: written past b's capacity", room)
	}
	_, wantRead := escapeBlocksGo([]byte("ab\""), s)
	want, _ := escapeBlocksGo([]byte("ab\""), s[:gotRead])
	switch {
	case &got[:1][0] != &b[:1][0] || cap(got) != cap(b):
		t.Fatalf("room %d: b was grown", room)
	case gotRead > wantRead || gotRead < wantRead && cap(got)-len(got) >= 128:
		t.Fatalf("room %d: read %d (%d left), the bytes' reading %d", room, gotRead, cap(got)-len(got), wantRead)
	case gotRead < len(s) && gotRead%64 != 0:
		t.Fatalf("room %d: stopped at %d, inside a block", room, gotRead)
	case !bytes.Equal(got, want):
		t.Fatalf("room %d: read %d, wrote\n%q\nthe bytes' reading:\n%q", room, gotRead, got, want)
	}
	if room >= 2*len(s)+128 && gotRead != wantRead {
		t.Fatalf("room %d: read %d of the %d the bytes' reading reads", room, gotRead, wantRead)
	}
}

// TestEscapeBlocksOfEveryControlCharacter: each control character, at the
// start, the middle and the end of texts of every length to two blocks, is
// escaped or stops the writing as the bytes' reading does.
func TestEscapeBlocksOfEveryControlCharacter(t *testing.T) {
	if !Escaper {
		t.Skip("EscapeBlocks reads nothing without AVX-512 VBMI2")
	}
	for c := range byte(0x20) {
		t.Run(strconv.Itoa(int(c)), func(t *testing.T) {
			for n := 1; n <= 130; n++ {
				for _, at := range []int{0, n / 2, n - 1} {
					s := bytes.Repeat([]byte{'x'}, n)
					s[at] = c
					sameEscaping(t, s, 2*n+128)
					sameEscaping(t, s, 128)
				}
			}
		})
	}
}

// TestEscapeBlocksOfRandomText: random valid text of the characters that
// matter, at every length to a few blocks.
func TestEscapeBlocksOfRandomText(t *testing.T) {
	if !Escaper {
		t.Skip("EscapeBlocks reads nothing without AVX-512 VBMI2")
	}
	r := rand.New(rand.NewPCG(7, 11))
	pieces := []string{"a", "b", " ", `"`, `\`, "\n", "\r", "\t", "é", "漢", "😀", "\x7f", "\x01", "\b"}
	for n := range 400 {
		var sb strings.Builder
		for sb.Len() < n {
			p := pieces[r.IntN(len(pieces))]
			if (p == "\x01" || p == "\b") && r.IntN(20) != 0 {
				continue
			}
			sb.WriteString(p)
		}
		sameEscaping(t, []byte(sb.String()), r.IntN(3*n+200))
	}
}

// FuzzEscapeBlocks holds EscapeBlocks to the bytes' reading on any valid
// UTF-8 without U+2028 or U+2029.
func FuzzEscapeBlocks(f *testing.F) {
	for _, s := range escapeCases() {
		f.Add(s, uint16(len(s)))
	}
	f.Fuzz(func(t *testing.T, s []byte, room uint16) {
		if valid, sep := wantText(s); !Escaper || !valid || sep {
			t.Skip()
		}
		sameEscaping(t, s, int(room))
	})
}

func BenchmarkEscapeBlocks(b *testing.B) {
	s := escapeCases()["dense escapes"]
	for len(s) < 512<<10 {
		s = append(s, s...)
	}
	out := make([]byte, 0, 2*len(s)+128)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		out, _ = EscapeBlocks(out[:0], s)
	}
}

// sameTextEscaping holds EscapeText to what it must do with any bytes s, after
// a prefix, with room bytes of capacity past it: write what the bytes'
// reading writes of what it read, never past b's capacity; stop at a block's
// start (or before a lead at the end with too few bytes after it); write valid
// UTF-8 without U+2028 or U+2029 up to CharStart(s, read); read all of s only
// when s is such text; and, with room to spare, stop only before a block with
// a control character written \u00XX, or one after which the text cannot be
// valid (an error no bytes after it mend) or that ends U+2028 or U+2029.
func sameTextEscaping(t *testing.T, s []byte, room int) {
	t.Helper()
	whole := bytes.Repeat([]byte{0xAA}, 3+room+256)
	b := whole[: 3 : 3+room]
	copy(b, "ab\"")
	got, read := EscapeText(b, s)
	if past := whole[3+room:]; !bytes.Equal(past, bytes.Repeat([]byte{0xAA}, len(past))) {
		t.Fatalf("%q room %d: written past b's capacity", s, room)
	}
	want, wantRead := escapeBlocksGo([]byte("ab\""), s[:read])
	cut := CharStart(s, len(s))
	if valid, _ := wantText(s[cut:]); valid {
		cut = len(s)
	}
	switch valid, sep := wantText(s[:CharStart(s, read)]); {
	case &got[:1][0] != &b[:1][0] || cap(got) != cap(b):
		t.Fatalf("%q room %d: b was grown", s, room)
	case read < len(s) && read%64 != 0 && read != cut:
		t.Fatalf("%q room %d: stopped at %d, inside a block", s, room, read)
	case wantRead != read || !bytes.Equal(got, want):
		t.Fatalf("%q room %d: read %d, wrote\n%q\nthe bytes' reading:\n%q", s, room, read, got, want)
	case !valid || sep:
		t.Fatalf("%q room %d: read %d, not text up to its last character (valid %v, U+2028/9 %v)", s, room, read, valid, sep)
	}
	if valid, sep := wantText(s); read == len(s) && (!valid || sep) {
		t.Fatalf("%q room %d: read all of text that is not valid (%v) or holds U+2028/9 (%v)", s, room, valid, sep)
	}
	if room < 2*len(s)+128 || read == len(s) || read == cut {
		return
	}
	end := min(read+64, len(s))
	if _, letterless := escapeBlocksGo(nil, s[read:end]); letterless < end-read {
		return
	}
	if !validPrefix(s[:end]) || bytes.Contains(s[max(read-2, 0):end], []byte("\u2028")) || bytes.Contains(s[max(read-2, 0):end], []byte("\u2029")) {
		return
	}
	t.Fatalf("%q: stopped at %d before a block it could write", s, read)
}

// validPrefix says whether bytes may follow s to make it valid UTF-8.
func validPrefix(s []byte) bool {
	c := CharStart(s, len(s))
	if !utf8.Valid(s[:c]) {
		return false
	}
	var mend func(p []byte) bool
	mend = func(p []byte) bool {
		if utf8.Valid(p) {
			return true
		}
		if len(p) >= utf8.UTFMax {
			return false
		}
		for _, c := range []byte{0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF} { // the ends of every range a byte after a lead may take
			if mend(append(p[:len(p):len(p)], c)) {
				return true
			}
		}
		return false
	}
	return mend(s[c:])
}

// textPieces are what EscapeText meets: text, escapes, control characters,
// U+2028 and U+2029, and each kind of UTF-8 error and cut character.
var textPieces = []string{"a", " ", `"`, `\`, "\n", "\t", "é", "漢", "😀", "\x01",
	"\u2028", "\u2029", "\xe2\x80", "\xe2", "\x80", "\xbf", "\xc0", "\xc1\xbf", "\xed\xa0\x80",
	"\xf4\x90\x80\x80", "\xf5", "\xe0\x80", "\xf0\x8f", "\xf0\x9f\x98"}

// randomText is n bytes or a little more of pieces, most of them plain text
// (rare is how seldom the last ten pieces, the errors and cuts, come).
func randomText(r *rand.Rand, n, rare int) []byte {
	var sb strings.Builder
	for sb.Len() < n {
		i := r.IntN(len(textPieces))
		if i >= len(textPieces)-10 && r.IntN(rare) != 0 {
			continue
		}
		sb.WriteString(textPieces[i])
	}
	return []byte(sb.String())
}

// TestEscapeTextOfAnyBytes: EscapeText on escapeCases, on CheckText's edge
// cases, and on random text with errors placed anywhere, at every length to a
// few blocks and with every amount of room.
func TestEscapeTextOfAnyBytes(t *testing.T) {
	if !Escaper {
		t.Skip("EscapeText reads nothing without AVX-512 VBMI2")
	}
	t.Run("escape cases", func(t *testing.T) {
		for _, s := range escapeCases() {
			for _, room := range []int{0, 127, 128, 200, len(s), 2*len(s) + 128} {
				sameTextEscaping(t, s, room)
			}
		}
	})
	t.Run("block edges", func(t *testing.T) {
		for _, c := range blockEdgeCases() {
			for _, room := range []int{128, 2*len(c.text) + 128} {
				sameTextEscaping(t, c.text, room)
			}
		}
	})
	t.Run("tails of a few bytes", func(t *testing.T) {
		// The last block loaded under a mask: what ends the blocks before is
		// judged with the tail's bytes, even with one or two of them.
		for _, end := range []string{"\xff", "\xc0", "\xc3", "\xe2", "\xe2\x80", "\xf0", "\xf0\x9f\x98", "\xed\xa0", "é", "\u2028"[:2]} {
			for _, blocks := range []int{1, 2} {
				for tail := 1; tail <= 4; tail++ {
					s := []byte(strings.Repeat("x", 64*blocks-len(end)) + end + strings.Repeat("\t", tail))
					sameTextEscaping(t, s, 2*len(s)+128)
				}
			}
		}
	})
	t.Run("ends", func(t *testing.T) {
		// A lead before a whole character at the end: the character is not
		// cut short, and the lead's error shows at its first byte.
		for _, end := range []string{"\xf0\xc2\x80", "\xf5é", "\xe2é", "\xf0é", "\xc3", "\xe2\x80", "\xf0\x9f\x98", "😀", "\xffa"} {
			for _, n := range []int{0, 61, 100, 125} {
				s := []byte(strings.Repeat("a", n) + end)
				sameTextEscaping(t, s, 2*len(s)+128)
			}
		}
	})
	r := rand.New(rand.NewPCG(3, 5))
	for _, rare := range []int{1, 20, 200} {
		t.Run("random, errors 1 in "+strconv.Itoa(rare), func(t *testing.T) {
			for n := range 400 {
				s := randomText(r, n, rare)
				sameTextEscaping(t, s, 2*len(s)+128)
				sameTextEscaping(t, s, r.IntN(2*len(s)+200))
			}
		})
	}
}

// FuzzEscapeText holds EscapeText to sameTextEscaping on any bytes.
func FuzzEscapeText(f *testing.F) {
	for _, s := range escapeCases() {
		f.Add(s, uint16(len(s)))
	}
	f.Add([]byte(strings.Repeat("a", 63)+"\xe2\x80\xa8"+strings.Repeat("b", 70)), uint16(1000))
	f.Fuzz(func(t *testing.T, s []byte, room uint16) {
		if !Escaper {
			t.Skip()
		}
		sameTextEscaping(t, s, int(room))
		sameTextEscaping(t, s, 2*len(s)+128)
	})
}

func BenchmarkEscapeText(b *testing.B) {
	s := escapeCases()["prose"]
	for len(s) < 512<<10 {
		s = append(s, s...)
	}
	out := make([]byte, 0, 2*len(s)+128)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		if out, _ = EscapeText(out[:0], s); len(out) < len(s) {
			b.Fatal("stopped")
		}
	}
}
