package bytemask

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// plainCases are texts with each thing PlainRun stops at, and things it must
// not stop at, placed across the blocks' edges.
func plainCases() map[string][]byte {
	prose := strings.Repeat("The gateway forwards each request; Café, naïve, 漢字, ✓ 😀. ", 40)
	escaped := strings.Repeat(`line one\nline \"two\"\tand a \\ path\/x\b\f\r `, 40)
	return map[string][]byte{
		"prose":                  []byte(prose),
		"two-byte escapes":       []byte(escaped),
		"a quote":                insertAt(prose, 500, `"`),
		"an escaped quote":       insertAt(escaped, 500, `\"`),
		"a control character":    insertAt(prose, 700, "\x01"),
		"a u escape":             insertAt(escaped, 600, `\u00e9`),
		"an unknown escape":      insertAt(escaped, 600, `\x`),
		"invalid UTF-8":          insertAt(prose, 900, "\xff"),
		"a cut character":        insertAt(prose, 640, "\xe6\xbc"),
		"a line separator":       insertAt(prose, 300, "\u2028"),
		"backslash runs":         []byte(strings.Repeat(`a\\\\\"\\\\b\\\`+"\\n", 200)),
		"backslashes at an edge": []byte(strings.Repeat("x", 61) + strings.Repeat(`\\`, 100) + strings.Repeat("y", 300)),
		// ASCII blocks after a character cut short: the error shows at the first
		// ASCII byte, in a block with nothing but ASCII in it.
		"a lead before ASCII blocks":        []byte(prose[:300] + "\xe2" + strings.Repeat("a", 300)),
		"a cut character before ASCII":      []byte(prose[:300] + "\xf0\x9f\x98" + strings.Repeat("a", 300)),
		"continuations after ASCII blocks":  []byte(strings.Repeat("a", 300) + "\x80\xbf" + prose),
		"whole characters and ASCII blocks": []byte(strings.Repeat(strings.Repeat("a", 130)+"😀é", 8)),
	}
}

// insertAt is base with s inserted at at.
func insertAt(base string, at int, s string) []byte { return []byte(base[:at] + s + base[at:]) }

// TestPlainRunIsTheBlocksReading: PlainRun ends where reading the blocks one
// by one (textBlockGo) ends, from every start, in every case.
func TestPlainRunIsTheBlocksReading(t *testing.T) {
	if !avx512 {
		t.Skip("PlainRun reads nothing without AVX-512")
	}
	for name, s := range plainCases() {
		t.Run(name, func(t *testing.T) {
			for i := 3; i < len(s); i++ {
				got, gotEnd := PlainRun(s, i)
				want, wantEnd := plainRunGo(s, i)
				if got != want || gotEnd != wantEnd {
					t.Fatalf("from %d: PlainRun %d %v, block by block %d %v", i, got, gotEnd, want, wantEnd)
				}
			}
		})
	}
}

// TestPlainRunReadsPlainText: text with nothing to stop at is read to its
// last whole block (escapes and all); a closing quote ends it in the block
// holding it, and what stands before that quote decides whether it may.
func TestPlainRunReadsPlainText(t *testing.T) {
	if !avx512 {
		t.Skip("PlainRun reads nothing without AVX-512")
	}
	text := strings.Repeat("plain text, é ✓ ", 100) // 1900 bytes
	escaped := strings.Repeat(`escaped \"text\", \n `, 100)
	cases := []struct {
		name string
		s    string
		next int
		end  bool
		past bool // next is the least it may be
	}{
		{"plain to the last block", text, 3 + (len(text)-3)/64*64, false, false},
		{"fewer than 64 bytes", text[:66], 3, false, false},
		{"a quote ends it", text[:1000] + `"` + text[1000:], 1001, true, false},
		{"a quote at a block's first byte", text[:67] + `"` + text[67:], 68, true, false},
		{"a control character before the quote", text[:990] + "\x01" + text[990:1000] + `"` + text[1000:], 3 + 987/64*64, false, false},
		{"a u escape before the quote", text[:990] + `\u00e9` + text[990:1000] + `"` + text[1000:], 3 + 987/64*64, false, false},
		{"a control character after the quote", text[:1000] + `"` + "\x01" + text[1000:], 1001, true, false},
		{"a cut character at the quote", text[:1000] + "\xe6\xbc\"" + text[1000:], 3 + 997/64*64, false, false},
		{"escaped quotes do not end it", escaped, len(escaped) - 64, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			next, end := PlainRun([]byte(c.s), 3)
			if c.past && next >= c.next && end == c.end {
				return
			}
			if next != c.next || end != c.end {
				t.Fatalf("PlainRun = %d %v, want %d %v", next, end, c.next, c.end)
			}
		})
	}
}

// TestPlainRunOfRandomText holds PlainRun to the blocks' reading on random
// texts of the bytes it tells apart.
func TestPlainRunOfRandomText(t *testing.T) {
	if !avx512 {
		t.Skip("PlainRun reads nothing without AVX-512")
	}
	r := rand.New(rand.NewPCG(3, 4))
	rare := []byte("\"\\/bfnrtux\x00\x1f\x7f\x80\xbf\xc3\xe2\xe6\xf0\xff")
	plain := []byte("abcdefgh é漢")
	for n := range 3000 {
		s := make([]byte, 64+r.IntN(400))
		for i := range s {
			if r.IntN(40) == 0 {
				s[i] = rare[r.IntN(len(rare))]
			} else {
				s[i] = plain[r.IntN(len(plain))]
			}
		}
		for i := 3; i+64 <= len(s); i += 1 + r.IntN(9) {
			got, gotEnd := PlainRun(s, i)
			want, wantEnd := plainRunGo(s, i)
			if got != want || gotEnd != wantEnd {
				t.Fatalf("text %d %q from %d: PlainRun %d %v, block by block %d %v", n, s, i, got, gotEnd, want, wantEnd)
			}
		}
	}
}

func FuzzPlainRun(f *testing.F) {
	for _, s := range plainCases() {
		f.Add(s, uint16(3))
	}
	f.Fuzz(func(t *testing.T, s []byte, at uint16) {
		i := 3 + int(at)%max(len(s), 1)
		got, gotEnd := PlainRun(s, i)
		want, wantEnd := plainRunGo(s, i)
		if avx512 && (got != want || gotEnd != wantEnd) {
			t.Fatalf("%q from %d: PlainRun %d %v, block by block %d %v", s, i, got, gotEnd, want, wantEnd)
		}
	})
}

// BenchmarkPlainRun reads text with a non-ASCII character in most blocks
// (mixed), in none (English prose and code) and in all (Chinese).
func BenchmarkPlainRun(b *testing.B) {
	for _, tc := range []struct{ name, text string }{
		{"mixed", `The gateway forwards each request; \"Café\", naïve,\n 漢字, ✓. `},
		{"ascii", `The gateway forwards each request; \"retries\" it,\n then fails over. `},
		{"cjk", `网关把每个请求转发给它的目标；\"失败时\"重试，\n然后切换到下一个。`},
	} {
		s := []byte(strings.Repeat(tc.text, 600_000/len(tc.text)))
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				if next, _ := PlainRun(s, 3); next < len(s)-64 {
					b.Fatal("stopped")
				}
			}
		})
	}
}

// escapedAfterNaive reads backslash one bit at a time, the first bit escaped
// when carry is 1; next says whether bit 63 escapes the next block's first.
func escapedAfterNaive(backslash, carry uint64) (esc, next uint64) {
	i := 0
	if carry == 1 {
		esc, i = 1, 1
	}
	for ; i < 64; i++ {
		if backslash>>i&1 == 1 {
			if i == 63 {
				return esc, 1
			}
			esc |= 1 << (i + 1)
			i++ // the escaped byte, whatever it is
		}
	}
	return esc, 0
}

func TestEscapedAfter(t *testing.T) {
	cases := map[string]uint64{
		"none": 0, "one": 1, "pair": 3, "three": 7, "all": ^uint64(0), "top": 1 << 63,
		"top pair": 3 << 62, "odd start": 0b110, "runs": 0b1011101101,
	}
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 2000 { // sparse and dense runs of backslashes
		cases[strconv.Itoa(i)] = r.Uint64()&r.Uint64() | r.Uint64()&r.Uint64()&r.Uint64()
	}
	for name, bs := range cases {
		for carry := range uint64(2) {
			t.Run(name+"/carry "+strconv.FormatUint(carry, 10), func(t *testing.T) {
				esc, next := escapedAfter(bs, carry)
				wantEsc, wantNext := escapedAfterNaive(bs, carry)
				if esc != wantEsc || next != wantNext {
					t.Fatalf("escapedAfter(%064b, %d)\n = %064b %d\nwant %064b %d", bs, carry, esc, next, wantEsc, wantNext)
				}
				if carry == 0 && esc != Escaped(bs) {
					t.Fatalf("escapedAfter(%064b, 0) is not Escaped's %064b", bs, Escaped(bs))
				}
			})
		}
	}
}
