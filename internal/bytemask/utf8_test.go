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
				valid, sep := CheckText(s)
				want := utf8.Valid(s) && (bytes.Contains(s, []byte("\u2028")) || bytes.Contains(s, []byte("\u2029")))
				if valid != utf8.Valid(s) || sep != want {
					t.Fatalf("%q: CheckText %v %v, want %v %v", s, valid, sep, utf8.Valid(s), want)
				}
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
	f.Fuzz(func(t *testing.T, s []byte) {
		valid, sep := CheckText(s)
		want := utf8.Valid(s) && (bytes.Contains(s, []byte("\u2028")) || bytes.Contains(s, []byte("\u2029")))
		if valid != utf8.Valid(s) || sep != want {
			t.Fatalf("%q: CheckText %v %v, want %v %v", s, valid, sep, utf8.Valid(s), want)
		}
	})
}
