package bytemask

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// invalidText says whether some byte of s, or the quote after it, shows an
// error when s follows ASCII.
func invalidText(s []byte) bool {
	w := append([]byte("aaa"), s...)
	w = append(w, '"')
	for i := 3; i < len(w); i++ {
		if invalidAt(w[i-3], w[i-2], w[i-1], w[i]) {
			return true
		}
	}
	return false
}

// The tables judge every string of up to three bytes as utf8.Valid does, and
// four-byte ones from the bytes at every range's edges.
func TestInvalidIsUTF8Validity(t *testing.T) {
	t.Run("up to three bytes", func(t *testing.T) {
		var s [3]byte
		for n := 1; n <= 3; n++ {
			for v := range 1 << (8 * n) {
				for i := range n {
					s[i] = byte(v >> (8 * i))
				}
				if got, want := invalidText(s[:n]), !utf8.Valid(s[:n]); got != want {
					t.Fatalf("%q: invalid %v, utf8.Valid says %v", s[:n], got, !want)
				}
			}
		}
	})
	t.Run("four bytes", func(t *testing.T) {
		edges := []byte{0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf,
			0xe0, 0xe1, 0xec, 0xed, 0xee, 0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xf7, 0xf8, 0xff}
		for _, a := range edges {
			for _, b := range edges {
				for _, c := range edges {
					for _, d := range edges {
						s := []byte{a, b, c, d}
						if got, want := invalidText(s), !utf8.Valid(s); got != want {
							t.Fatalf("%q: invalid %v, utf8.Valid says %v", s, got, !want)
						}
					}
				}
			}
		}
	})
	t.Run("random text", func(t *testing.T) {
		pieces := []string{"a", "é", "漢", "😀", "\u2028", "\xff", "\xc3", "\xe2\x80", "\xed\xa0\x80",
			"\xf4\x90\x80\x80", "\xc0\xaf", "\x80", "\xf0\x9f", "\"", "\\"}
		r := rand.New(rand.NewPCG(7, 8))
		for range 200000 {
			var s []byte
			for n := 1 + r.IntN(6); n > 0; n-- {
				s = append(s, pieces[r.IntN(len(pieces))]...)
			}
			if got, want := invalidText(s), !utf8.Valid(s); got != want {
				t.Fatalf("%q: invalid %v, utf8.Valid says %v", s, got, !want)
			}
		}
	})
}

// CheckText says what utf8.Valid says, and finds U+2028 and U+2029 where
// bytes.Contains does, of text made of every kind of character, good and bad,
// at every length around the blocks' edges.
func TestCheckText(t *testing.T) { eachForm(t, checkText) }

func checkText(t *testing.T) {
	pieces := []string{"a", "plain text ", "é", "漢字", "😀", "\u2028", "\xff", "\xc3", "\xe2\x80", "\xed\xa0\x80",
		"\xf4\x90\x80\x80", "\xc0\xaf", "\x80", "\xf0\x9f", "\xf0\x9f\x98", "\xe0\x80\x80", "\xf8\x88\x80\x80\x80",
		"\u2029", "\u201c", "\u2027", "\u202a", "\u00a8"}
	r := rand.New(rand.NewPCG(11, 12))
	for length := range 300 {
		t.Run(strconv.Itoa(length), func(t *testing.T) {
			for range 300 {
				s := make([]byte, 0, length+8)
				bad := r.IntN(3) == 0 // else only good pieces
				for len(s) < length {
					p := pieces[r.IntN(len(pieces))]
					if !bad && !utf8.ValidString(p) {
						continue
					}
					s = append(s, p...)
				}
				s = s[:length] // may cut a character
				holdsToText(t, s)
			}
		})
	}
}

// TestCheckTextReadsNothingBeforeIt: what lies before a string, in the same
// memory, is not read as its text: a string that starts with the last bytes
// of a character started before it is invalid, whatever came before.
func TestCheckTextReadsNothingBeforeIt(t *testing.T) {
	rest := strings.Repeat("plain text and é ", 10) // 180 bytes: whole blocks and a last one
	cases := []struct{ before, start string }{
		{"\xe2\x80", "\xa8"},     // U+2028 cut at its last byte
		{"\xe2", "\x80\xa9"},     // U+2029 cut at its second
		{"\xf0\x9f\x98", "\x80"}, // an emoji cut at its last
		{"\xc3", "\xa9"},         // é cut at its last
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%q", tc.before), func(t *testing.T) {
			buf := []byte(tc.before + tc.start + rest)
			valid, sep := CheckText(buf[len(tc.before):])
			if valid || sep {
				t.Fatalf("CheckText %v %v: read the bytes before the string", valid, sep)
			}
		})
	}
}

func FuzzCheckText(f *testing.F) {
	f.Add([]byte("plain text, then é and 漢字 and 😀 across the edge of a block of sixty-four bytes"))
	f.Add([]byte("\xff\xfe"))
	f.Add([]byte(strings.Repeat("x", 90) + "\u2028 and \u2029 near the end"))
	f.Fuzz(holdsToText)
}

// wantText is CheckText's answer by the standard library: utf8.Valid, and
// U+2028 or U+2029 found by bytes.Contains in a valid s.
func wantText(s []byte) (valid, lineSep bool) {
	valid = utf8.Valid(s)
	return valid, valid && (bytes.Contains(s, []byte("\u2028")) || bytes.Contains(s, []byte("\u2029")))
}

// holdsToText fails t unless CheckText(s) is wantText(s).
func holdsToText(t *testing.T, s []byte) {
	t.Helper()
	valid, sep := CheckText(s)
	if wv, ws := wantText(s); valid != wv || sep != ws {
		t.Fatalf("%q: CheckText %v %v, want %v %v", s, valid, sep, wv, ws)
	}
}

// TestCheckTextAtBlockEdges: a character (or what is left of one) at each
// edge CheckText has: the first AVX2 block and the first AVX-512 one (64),
// two AVX-512 blocks (128, 192), the tail block's start (len-64), the end.
// The rest is ASCII, so that a block with nothing but ASCII in it follows or
// precedes the bytes under test.
func TestCheckTextAtBlockEdges(t *testing.T) { eachForm(t, checkTextAtBlockEdges) }

func checkTextAtBlockEdges(t *testing.T) {
	for _, c := range blockEdgeCases() {
		t.Run(c.name, func(t *testing.T) { holdsToText(t, c.text) })
	}
}

// blockEdgeCase is ASCII text with a sequence of bytes at one of CheckText's
// edges (see TestCheckTextAtBlockEdges).
type blockEdgeCase struct {
	name string
	text []byte
}

func blockEdgeCases() []blockEdgeCase {
	cases := []struct {
		name   string
		length int
		at     int // where seq starts
		seq    string
	}{
		// A lead last in a block, then an all-ASCII block: the error shows at
		// the ASCII block's first byte, which the ASCII shortcut must not skip.
		{"lead E2 ends block 1, ASCII block 2", 128, 63, "\xe2"},
		{"lead F0 ends block 2, ASCII block 3", 192, 127, "\xf0"},
		{"E2 80 ends block 2, ASCII block 3", 192, 126, "\xe2\x80"},
		{"F0 9F 98 ends block 2, ASCII block 3", 192, 125, "\xf0\x9f\x98"},
		{"lead C3 ends block 3, ASCII block 4", 256, 191, "\xc3"},
		{"lead E2 ends the whole blocks, ASCII tail", 200, 191, "\xe2"},
		// An ASCII block, then one that starts with continuation bytes.
		{"continuation starts block 2", 128, 64, "\x80"},
		{"two continuations start block 3", 192, 128, "\xbf\xbf"},
		{"continuation starts the tail block", 200, 136, "\x80"},
		// Whole characters across the edges: valid.
		{"é across 64", 128, 63, "é"},
		{"漢 across 128", 192, 127, "漢"},
		{"😀 across 128 (3+1)", 192, 125, "😀"},
		{"😀 across 128 (1+3)", 192, 127, "😀"},
		{"😀 across the tail start", 200, 134, "😀"},
		{"😀 last", 200, 196, "😀"},
		// Invalid forms across an AVX-512 edge.
		{"surrogate ED A0 80 across 128", 192, 127, "\xed\xa0\x80"},
		{"surrogate ED BF BF across 128", 192, 126, "\xed\xbf\xbf"},
		{"ED 9F BF (U+D7FF) across 128", 192, 127, "\xed\x9f\xbf"},
		{"overlong E0 9F BF across 128", 192, 127, "\xe0\x9f\xbf"},
		{"overlong C0 AF across 128", 192, 127, "\xc0\xaf"},
		{"overlong F0 8F BF BF across 128", 192, 126, "\xf0\x8f\xbf\xbf"},
		{"F4 90 80 80 (above U+10FFFF) across 128", 192, 125, "\xf4\x90\x80\x80"},
		{"F4 8F BF BF (U+10FFFF) across 128", 192, 125, "\xf4\x8f\xbf\xbf"},
		{"F5 80 80 80 across 128", 192, 127, "\xf5\x80\x80\x80"},
		{"five bytes F8 88 80 80 80 across 128", 192, 126, "\xf8\x88\x80\x80\x80"},
		{"😀 then a fifth byte across 128", 192, 124, "😀\x80"},
		// Cut at the end of a string long enough for the tail block.
		{"E2 80 last", 200, 198, "\xe2\x80"},
		{"F0 9F 98 last", 200, 197, "\xf0\x9f\x98"},
		{"F0 9F 98 last, whole blocks only", 192, 189, "\xf0\x9f\x98"},
		// U+2028 and U+2029 split across every kind of edge.
		{"U+2028 across 64 (1+2)", 128, 63, "\u2028"},
		{"U+2029 across 64 (2+1)", 128, 62, "\u2029"},
		{"U+2028 across 128 (1+2)", 192, 127, "\u2028"},
		{"U+2029 across 128 (2+1)", 192, 126, "\u2029"},
		{"U+2029 across 192", 256, 190, "\u2029"},
		{"U+2028 across the whole blocks' end", 200, 191, "\u2028"},
		{"U+2029 across the tail start", 200, 135, "\u2029"},
		{"U+2028 across the tail start (2+1)", 200, 134, "\u2028"},
		{"U+2029 in the 32 bytes before the tail block", 200, 110, "\u2029"},
		{"U+2028 last", 200, 197, "\u2028"},
		{"U+2029 last, whole blocks only", 192, 189, "\u2029"},
		{"E2 80 AA (not a separator) across 128", 192, 126, "\xe2\x80\xaa"},
		{"E2 80 A7 (U+2027) across 128", 192, 127, "\u2027"},
		{"E2 81 A8 across 128", 192, 126, "\xe2\x81\xa8"},
		{"80 A8 after ASCII across 128", 192, 127, "\x80\xa8"},
	}
	out := make([]blockEdgeCase, 0, len(cases))
	for _, tc := range cases {
		s := []byte(strings.Repeat("a", tc.length))
		copy(s[tc.at:], tc.seq)
		out = append(out, blockEdgeCase{tc.name, s})
	}
	return out
}

// blocksModel is what utf8Blocks512 says of the blocks at b[start:]: the
// scalar tables on every byte with the three before it, and whether a byte
// ends E2 80 A8 or E2 80 A9 (valid or not).
func blocksModel(b []byte, start, blocks int) (valid, lineSep bool) {
	valid = true
	for i := start; i < start+64*blocks; i++ {
		valid = valid && !invalidAt(b[i-3], b[i-2], b[i-1], b[i])
		lineSep = lineSep || b[i-2] == 0xe2 && b[i-1] == 0x80 && b[i]&0xfe == 0xa8
	}
	return valid, lineSep
}

// TestUTF8Blocks512MatchesTables: utf8Blocks512 says what the scalar tables
// say, of text that is mostly valid (so that one bad byte decides), at every
// start within a block and for one to five blocks; the AVX2 loop too.
func TestUTF8Blocks512MatchesTables(t *testing.T) {
	if !avx512 {
		t.Skip("no AVX-512 here")
	}
	pieces := []string{"a", "é", "漢", "😀", "\u2027", "\u00a8", " ", "\u202a"}
	seps := []string{"\u2028", "\u2029"}
	hot := []byte{0x41, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xa8, 0xa9, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe2, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff}
	r := rand.New(rand.NewPCG(5, 6))
	for it := range 200_000 {
		blocks, start := 1+r.IntN(5), 3+r.IntN(64)
		n := start + 64*blocks
		var b []byte
		for len(b) < n {
			if r.IntN(150) == 0 {
				b = append(b, seps[r.IntN(2)]...)
			} else {
				b = append(b, pieces[r.IntN(len(pieces))]...)
			}
		}
		b = b[:n]
		for range r.IntN(3) {
			b[r.IntN(n)] = hot[r.IntN(len(hot))]
		}
		if r.IntN(4) == 0 { // a block of ASCII only, after whatever ends the one before
			j := start + 64*r.IntN(blocks)
			copy(b[j:j+64], strings.Repeat("a", 64))
			b[j-1] = hot[r.IntN(len(hot))]
		}
		if r.IntN(8) == 0 { // a separator across a block's edge
			if e := start + 64*r.IntN(blocks+1) - 2 + r.IntN(3); e >= 0 && e+3 <= n {
				copy(b[e:], seps[r.IntN(2)])
			}
		}
		wv, ws := blocksModel(b, start, blocks)
		if v, sep := utf8Blocks512(&b[start], blocks); v != wv || sep != ws {
			t.Fatalf("%d: start %d, %d blocks: utf8Blocks512 %v %v, the tables %v %v\n%q", it, start, blocks, v, sep, wv, ws, b)
		}
		if start >= 32 {
			if v, sep := utf8Blocks(&b[start], blocks, &b[start-32]); v != wv || sep != ws {
				t.Fatalf("%d: start %d, %d blocks: utf8Blocks %v %v, the tables %v %v\n%q", it, start, blocks, v, sep, wv, ws, b)
			}
		}
	}
}
