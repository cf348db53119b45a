package openaijson

import (
	"testing"
	"unicode/utf8"
)

// TestValidLenIsDecodeRune: validLen agrees with utf8.DecodeRune on every lead
// byte of 0x80 and above, every second byte and the tails that matter (the
// sequence cut short included).
func TestValidLenIsDecodeRune(t *testing.T) {
	for b0 := 0x80; b0 < 0x100; b0++ {
		if validLen(string([]byte{byte(b0)}), 0) != 0 {
			t.Fatalf("%#x alone is not a character", b0)
		}
		for b1 := 0; b1 < 0x100; b1++ {
			for _, tail := range []string{"", "\x80", "\xbf", "\x80\x80", "\xbf\xbf", "\x80a", "a"} {
				s := string([]byte{byte(b0), byte(b1)}) + tail
				r, n := utf8.DecodeRuneInString(s)
				want := n
				if r == utf8.RuneError && n <= 1 {
					want = 0
				}
				if got := validLen(s, 0); got != want {
					t.Fatalf("%q: validLen %d, DecodeRune %d", s, got, want)
				}
				if got := validLen([]byte(s), 0); got != want {
					t.Fatalf("%q: validLen([]byte) %d, DecodeRune %d", s, got, want)
				}
			}
		}
	}
}
