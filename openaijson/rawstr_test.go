package openaijson

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/switchyard/switchyard/internal/bytemask"
	"github.com/switchyard/switchyard/internal/testutil"
)

// rawStrVerdict is what reading a string at data[0] (a quote) says: whether it
// is one, where it ends, whether decoding would mend it (of a string that is
// not one, nothing else counts: checkRawMessages refuses it and decoding says
// why).
type rawStrVerdict struct {
	ok   bool
	pos  int
	mend bool
}

func blockVerdict(t testing.TB, data []byte) rawStrVerdict {
	if !bytemask.Fast {
		t.Skip("rawStrBlocks runs only where bytemask is fast")
	}
	s, c := scanner{data: data}, rawCheck{}
	return verdict(s.rawStrBlocks(&c), s, c)
}

func scalarVerdict(data []byte) rawStrVerdict {
	s, c := scanner{data: data}, rawCheck{}
	return verdict(s.rawStrFrom(&c, 1), s, c)
}

func verdict(err error, s scanner, c rawCheck) rawStrVerdict {
	if err != nil {
		return rawStrVerdict{}
	}
	return rawStrVerdict{true, s.pos, c.mend}
}

// stringPieces are what a JSON string's bytes are made of, good and bad: the
// random strings put them across the 64-byte blocks' edges.
var stringPieces = []string{
	"a", "plain text ", `\"`, `\\`, `\/`, `\n`, `\t`, `\u00e9`, `\u00E9`, `\ud83d\ude00`, `\ud800`, `\udc00`,
	`\ud800\u0041`, `\ud800\\`, `\\\\\\`, `\\\"`, "é", "漢字", "✓", "😀", "\u2028", "\xff", "\xc3", "\xe2\x80",
	"\xed\xa0\x80", "\xf4\x90\x80\x80", "\xc0\xaf", `\x`, `\u12`, `\u12g4`, "\x01", "\x1f", "\x7f", `"`, `\`,
}

// plainPieces are what long strings are mostly made of: text a block may be
// read past without a closer look (bytemask.PlainRun).
var plainPieces = []string{"plain text ", "a", "é", "漢字", "✓", "😀", "\u2028", `\"`, `\\`, `\/`, `\n`, `\t`, `\\\\\\`}

func randomString(r *rand.Rand) []byte {
	return randomStringOf(r, 40, 0)
}

// randomStringOf is a string of up to n pieces, plain pieces (plainPieces)
// plain times in plain+1 (the rest stringPieces), and a few pieces after it.
func randomStringOf(r *rand.Rand, n, plain int) []byte {
	b := []byte{'"'}
	for n := r.IntN(n); n > 0; n-- {
		if r.IntN(plain+1) != 0 {
			b = append(b, plainPieces[r.IntN(len(plainPieces))]...)
			continue
		}
		b = append(b, stringPieces[r.IntN(len(stringPieces))]...)
	}
	if r.IntN(8) != 0 {
		b = append(b, '"')
	}
	for n := r.IntN(4); n > 0; n-- {
		b = append(b, stringPieces[r.IntN(len(stringPieces))]...)
	}
	return b
}

// The 64-byte reading says of every string what the byte-by-byte one says:
// valid or not, where it ends, whether decoding mends it. Short strings of
// any pieces, and long ones of mostly plain text with one of the others now
// and then (read past in runs of plain blocks).
func TestRawStrBlocksAreTheScalarReading(t *testing.T) {
	t.Run("short", func(t *testing.T) { rawStrBlocksAreTheScalarReading(t, 40, 0) })
	t.Run("long", func(t *testing.T) { rawStrBlocksAreTheScalarReading(t, 300, 30) })
}

func rawStrBlocksAreTheScalarReading(t *testing.T, n, plain int) {
	r := rand.New(rand.NewPCG(5, 6))
	for pad := range 70 { // every alignment of the pieces to the blocks
		t.Run(strconv.Itoa(pad), func(t *testing.T) {
			for range 3000 {
				s := randomStringOf(r, n, plain)
				data := append([]byte{'"'}, make([]byte, 0, pad+len(s))...)
				for range pad {
					data = append(data, 'x')
				}
				data = append(data, s[1:]...)
				if got, want := blockVerdict(t, data), scalarVerdict(data); got != want {
					t.Fatalf("%q: blocks %+v, bytes %+v", data, got, want)
				}
			}
		})
	}
}

func FuzzRawStr(f *testing.F) {
	for _, p := range stringPieces {
		f.Add(64, []byte(p+`"`))
	}
	f.Add(62, []byte(`\ud83d\ude00"`))
	r := rand.New(rand.NewPCG(9, 10))
	for range 20 {
		f.Add(r.IntN(130), randomStringOf(r, 300, 30)[1:])
	}
	f.Fuzz(func(t *testing.T, pad int, body []byte) {
		pad = max(pad, 0) % 130
		data := []byte{'"'}
		for range pad {
			data = append(data, 'x')
		}
		data = append(data, body...)
		if got, want := blockVerdict(t, data), scalarVerdict(data); got != want {
			t.Fatalf("%q: blocks %+v, bytes %+v", data, got, want)
		}
	})
}

// rawPieces are what a string's bytes are made of before encoding: the ones
// that are escaped, replaced or checked, among plain text.
var rawPieces = []string{
	"a", "plain text ", `"`, `\`, "\n", "\r", "\t", "\x00", "\x01", "\x1f", "\x7f", "é", "漢字", "✓", "😀",
	"\u2028", "\u2029", "\xe2\x80", "\xff", "\xc3", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xc0\xaf", "<&>",
}

// eachEscaper runs f with bytemask's escaper on (where the machine has it)
// and off, so that both ways appendPlainBlocks writes blocks (EscapeBlocks,
// and the quotes, backslashes and control characters of 32 blocks found in
// one call) are held to the eight-byte reading on this machine.
func eachEscaper(t *testing.T, f func(t *testing.T)) {
	has := bytemask.Escaper
	defer func() { bytemask.Escaper = has }()
	for _, on := range []bool{true, false} {
		if on && !has {
			continue
		}
		bytemask.Escaper = on
		t.Run(map[bool]string{true: "escaper", false: "specials"}[on], f)
	}
}

// Encoding by blocks writes every string byte for byte as the eight-byte
// reading does, strict or not, from a string or from bytes.
func TestAppendStrBlocksAreTheWordReading(t *testing.T) {
	eachEscaper(t, appendStrBlocksAreTheWordReading)
}

func appendStrBlocksAreTheWordReading(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for pad := range 70 {
		t.Run(strconv.Itoa(pad), func(t *testing.T) {
			for range 1000 {
				s := make([]byte, 0, 256)
				for range pad {
					s = append(s, 'x')
				}
				for n := r.IntN(60); n > 0; n-- {
					s = append(s, rawPieces[r.IntN(len(rawPieces))]...)
				}
				for _, strict := range []bool{false, true} {
					want, wantOK := appendStrBy(nil, s, strict, false)
					// Too little room for EscapeText, enough, and any, after what b held.
					for _, room := range []int{0, 2*len(s) + 128, r.IntN(2*len(s) + 300)} {
						pre := strings.Repeat("p", r.IntN(80))
						got, gotOK := appendStrBy(append(make([]byte, 0, len(pre)+room), pre...), s, strict, true)
						if gotOK != wantOK || (gotOK && string(got) != pre+string(want)) {
							t.Fatalf("%q strict=%v room %d after %d: blocks %q %v, words %q %v", s, strict, room, len(pre), got, gotOK, want, wantOK)
						}
						gotS, _ := appendStrBy(append(make([]byte, 0, len(pre)+room), pre...), string(s), strict, true)
						if gotOK && string(gotS) != string(got) {
							t.Fatalf("%q room %d: from a string %q, from bytes %q", s, room, gotS, got)
						}
					}
				}
			}
		})
	}
}

// TestAppendStrAfterACharacterAcrossABlockEdge: a character split by a
// block's edge, then what stops the one-pass escaping in the next block (a
// UTF-8 error, U+2028, a control character written \u00XX): the reading that
// goes on must start from the character's first byte, not from the edge.
func TestAppendStrAfterACharacterAcrossABlockEdge(t *testing.T) {
	eachEscaper(t, appendStrAfterACharacterAcrossABlockEdge)
}

func appendStrAfterACharacterAcrossABlockEdge(t *testing.T) {
	for _, edge := range []int{64, 128} {
		for _, char := range []string{"é", "漢", "😀"} {
			for split := 1; split < len(char); split++ {
				for _, stop := range []string{"\xff", "\xc0\xaf", "\u2028", "\x01", "\xe2\x80"} {
					s := strings.Repeat("a", edge-split) + char + strings.Repeat("b", 10) + stop + strings.Repeat("c", 70)
					t.Run(fmt.Sprintf("%d %s %d %q", edge, char, split, stop), func(t *testing.T) {
						for _, strict := range []bool{false, true} {
							got, gotOK := appendStrBy(make([]byte, 0, 2*len(s)+128), s, strict, true) // room for EscapeText
							want, wantOK := appendStrBy(nil, s, strict, false)
							if gotOK != wantOK || gotOK && string(got) != string(want) {
								t.Fatalf("strict=%v: blocks %q %v, words %q %v", strict, got, gotOK, want, wantOK)
							}
						}
					})
				}
			}
		}
	}
}

// TestAppendStrFitsWhereItsOutputFits: a string written into a buffer with
// room for exactly its encoding is written there, with no allocation: the
// blocks' escaper stores past what it writes, and must leave the last blocks
// to a writing that does not where the buffer has too little room for that.
func TestAppendStrFitsWhereItsOutputFits(t *testing.T) {
	eachEscaper(t, appendStrFitsWhereItsOutputFits)
}

func appendStrFitsWhereItsOutputFits(t *testing.T) {
	prose := strings.Repeat("Plain prose, Café ✓ 漢字. ", 200)
	code := strings.Repeat("if (a[\"k\"] == '\\n') {\n\treturn \"x\";\r\n}\n", 100)
	ansi := strings.Repeat("\x1b[31mred\x1b[0m \"text\" of a tool's output,\n", 100) // a block EscapeBlocks leaves now and then
	for _, base := range []string{prose, code, ansi} {
		for _, n := range []int{64, 65, 127, 128, 129, 200, 640, 1000, 3000} {
			s := base[:n]
			for !utf8.ValidString(s) {
				s = s[:len(s)-1]
			}
			t.Run(strconv.Itoa(len(s)), func(t *testing.T) {
				want, _ := appendStrBy(nil, s, false, false)
				b := make([]byte, 0, len(want))
				var got []byte
				allocs := testing.AllocsPerRun(10, func() { got, _ = appendStr(b, s, false) })
				if string(got) != string(want) || allocs != 0 || cap(got) != len(want) {
					t.Fatalf("wrote %d bytes with %.0f allocations (capacity %d, the bytes the same: %v), want %d in capacity %d",
						len(got), allocs, cap(got), string(got) == string(want), len(want), len(want))
				}
			})
		}
	}
}

// Strings made of one character over and over, the ones an escape makes six
// times longer among them, come out of the blocks as out of the words, after
// what b held already (written past its length only where it has room).
func TestAppendStrBlocksOfOneCharacter(t *testing.T) { eachEscaper(t, appendStrBlocksOfOneCharacter) }

func appendStrBlocksOfOneCharacter(t *testing.T) {
	for _, c := range []string{"\x01", `"`, "\n", "é", "\u2028", "\xff", "😀"} {
		t.Run(strconv.Quote(c), func(t *testing.T) {
			for n := 64; n < 300; n++ {
				s := []byte(strings.Repeat(c, n/len(c)+1))[:n]
				for _, strict := range []bool{false, true} {
					prefix := []byte("prefix")[:6:6]
					got, gotOK := appendStrBy(prefix, s, strict, true)
					want, wantOK := appendStrBy([]byte("prefix"), s, strict, false)
					if gotOK != wantOK || (gotOK && string(got) != string(want)) {
						t.Fatalf("%q strict=%v: blocks %q %v, words %q %v", s, strict, got, gotOK, want, wantOK)
					}
				}
			}
		})
	}
}

func FuzzAppendStrBlocks(f *testing.F) {
	for _, p := range rawPieces {
		f.Add(60, []byte(p+p+p))
	}
	f.Fuzz(func(t *testing.T, pad int, body []byte) {
		s := make([]byte, 0, 130+len(body))
		for range max(pad, 0) % 130 {
			s = append(s, 'x')
		}
		s = append(s, body...)
		for _, strict := range []bool{false, true} {
			want, wantOK := appendStrBy(nil, s, strict, false)
			for _, room := range []int{0, 2*len(s) + 128} { // too little for EscapeText, and enough
				got, gotOK := appendStrBy(make([]byte, 0, room), s, strict, true)
				if gotOK != wantOK || (gotOK && string(got) != string(want)) {
					t.Fatalf("%q strict=%v room %d: blocks %q %v, words %q %v", s, strict, room, got, gotOK, want, wantOK)
				}
			}
		}
	})
}

// BenchmarkAppendStr is the encoder on one long string of prose that needs an
// escape every ~40 bytes (quotes, a tab, a newline, backslashes) and holds
// non-ASCII text, into a buffer with room (as the upstream body has).
func BenchmarkAppendStr(b *testing.B) {
	const turn = "The \"gateway\" forwards each request\tto its target; when the target fails, " +
		"it retries with backoff and jitter,\nthen fails over to the next one in the chain. " +
		"Café, naïve, 漢字, ✓. Numbers: 3.14159, 2.71828; paths: C:\\tmp\\x.json. "
	// code, as agents send it: a quote, tab, newline or backslash every ~16 bytes
	const code = "\tif err := f(\"x\"); err != nil {\n\t\treturn fmt.Errorf(\"read %s: %w\", p, err)\n\t}\n"
	for _, tc := range []struct {
		name, text string
		kb         int
	}{{"1KB", turn, 1}, {"64KB", turn, 64}, {"64KB-code", code, 64}} {
		s := []byte(strings.Repeat(tc.text, tc.kb<<10/len(tc.text)+1)[:tc.kb<<10])
		buf := make([]byte, 0, 2*len(s))
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			cpu := testutil.CPUTime() // ns/op is wall time: on a shared machine, what else runs shows in it
			defer func() { b.ReportMetric(float64(testutil.CPUTime()-cpu)/float64(b.N), "cpu-ns/op") }()
			for b.Loop() {
				buf, _ = appendStr(buf[:0], s, true)
			}
		})
	}
}
