package bytemask

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// blocks are blocks of every kind of byte: each value at each position, and
// random blocks drawn from the bytes the masks tell apart and their neighbours.
func blocks() [][64]byte {
	var out [][64]byte
	for v := range 256 {
		for pos := range 64 {
			var p [64]byte
			for i := range p {
				p[i] = 'a'
			}
			p[pos] = byte(v)
			out = append(out, p)
		}
	}
	near := []byte("\"\\/bfnrtuUaBFNRT\x00\x1f\x20\x21\x5b\x5d\x7f\x80\xbf\xe0\xff\x01\x81\xa2\xdc\xf5")
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var p [64]byte
		for i := range p {
			if r.IntN(2) == 0 {
				p[i] = near[r.IntN(len(near))]
			} else {
				p[i] = byte(r.IntN(256))
			}
		}
		out = append(out, p)
	}
	return out
}

// LoadText says what textBlockGo says, of every block of blocks, each after
// three bytes drawn from every kind (ASCII, the leads and continuations of
// characters, random bytes), in each form the machine runs: AVX2 and, where it
// has it, AVX-512.
func TestTextBlockMatchesBytes(t *testing.T) {
	if !Fast {
		t.Skip("LoadText is textBlockGo on this machine")
	}
	eachForm(t, func(t *testing.T) {
		befores := []string{"aaa", "\x80\x80\x80", "a\xc3\xa9", "\x00\xe6\x97", "\xf0\x9f\x98",
			"\xf4\x90\x80", "aa\xe0", "a\xf0\x90", "\xed\xa0\x80", "\xff\xfe\xc0"}
		r := rand.New(rand.NewPCG(9, 10))
		for _, p := range blocks() {
			var w [67]byte
			before := befores[r.IntN(len(befores))]
			if r.IntN(4) == 0 {
				before = string([]byte{byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256))})
			}
			copy(w[:3], before)
			copy(w[3:], p[:])
			var got Masks
			if got.LoadText(&w); got != textBlockGo(&w) {
				t.Fatalf("%q:\n got %+v\nwant %+v", w[:], got, textBlockGo(&w))
			}
		}
	})
}

// eachForm runs f with the AVX2 loops and, where the machine has them, the
// AVX-512 ones.
func eachForm(t *testing.T, f func(t *testing.T)) {
	forms := []bool{false}
	if avx512 {
		forms = append(forms, true)
	}
	defer func(was bool) { avx512 = was }(avx512)
	for _, form := range forms {
		avx512 = form
		t.Run(map[bool]string{false: "AVX2", true: "AVX-512"}[form], f)
	}
}

// Stops says what blockGo says of every block of blocks.
func TestStopsMatchBytes(t *testing.T) {
	for _, p := range blocks() {
		m := blockGo(&p)
		if special, high := Stops(&p); special != m.Quote|m.Backslash|m.Control || high != m.High {
			t.Fatalf("%q: Stops %064b %064b, want %064b %064b", p[:], special, high, m.Quote|m.Backslash|m.Control, m.High)
		}
	}
}

// Specials gives each block's special bits as Stops does, for runs of any
// number of blocks (the test blocks end to end), and refuses to read past p.
func TestSpecialsMatchStops(t *testing.T) {
	var all []byte
	for _, p := range blocks() {
		all = append(all, p[:]...)
	}
	for _, k := range []int{0, 1, 2, 3, 7, 32, len(all) >> 6} {
		t.Run(strconv.Itoa(k), func(t *testing.T) {
			out := make([]uint64, k+1)
			out[k] = 12345 // past the blocks asked for: left alone
			Specials(all, out[:k])
			for j := range k {
				if want, _ := Stops((*[64]byte)(all[j<<6:])); out[j] != want {
					t.Fatalf("block %d: %064b, want %064b", j, out[j], want)
				}
			}
			if out[k] != 12345 {
				t.Fatalf("out[%d] written: %d", k, out[k])
			}
		})
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Specials read past the end of p")
		}
	}()
	Specials(all[:100], make([]uint64, 2))
}

func TestBlockGo(t *testing.T) {
	var p [64]byte
	copy(p[:], "a\"\\\x1f\x80/bfnrtu x")
	want := Masks{Quote: 1 << 1, Backslash: 1 << 2, Control: 1 << 3, High: 1 << 4,
		EscapeChar: 1<<1 | 1<<2 | 0b111111<<5, U: 1 << 11}
	want.Control |= 1<<64 - 1<<14 // the zero bytes after the text
	if got := blockGo(&p); got != want {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

// escapedNaive walks the backslashes one by one.
func escapedNaive(backslash uint64) uint64 {
	var esc uint64
	for i := 0; i < 64; i++ {
		if backslash>>i&1 == 1 {
			if i+1 < 64 {
				esc |= 1 << (i + 1)
			}
			i++ // the escaped byte, whatever it is
		}
	}
	return esc
}

func TestEscaped(t *testing.T) {
	cases := map[string]uint64{
		"none": 0, "one": 1, "pair": 3, "three": 7, "all": ^uint64(0), "top": 1 << 63,
		"odd start": 0b110, "runs": 0b1011101101,
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 2000 { // sparse and dense runs of backslashes
		cases["random "+strconv.Itoa(i)] = r.Uint64()&r.Uint64() | r.Uint64()&r.Uint64()&r.Uint64()
	}
	for name, bs := range cases {
		t.Run(name, func(t *testing.T) {
			if got, want := Escaped(bs), escapedNaive(bs); got != want {
				t.Fatalf("Escaped(%064b)\n = %064b\nwant %064b", bs, got, want)
			}
		})
	}
}

// BenchmarkCheckText: a long history's text in one string, and a message's.
func BenchmarkCheckText(b *testing.B) {
	long := []byte(strings.Repeat("The gateway forwards each request; Café, naïve, 漢字, ✓. ", 10000))
	for name, s := range map[string][]byte{"long": long, "message": long[:700]} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				if valid, _ := CheckText(s); !valid {
					b.Fatal("invalid")
				}
			}
		})
	}
}

func BenchmarkTextBlock(b *testing.B) {
	var w [67]byte
	for i := range w {
		w[i] = byte(i * 7)
	}
	has := avx512
	defer func() { avx512 = has }()
	for _, form := range []bool{false, true} {
		if form && !has {
			continue
		}
		avx512 = form
		b.Run(map[bool]string{false: "AVX2", true: "AVX-512"}[form], func(b *testing.B) {
			var m Masks
			for b.Loop() {
				TextBlock(&w, &m)
			}
		})
	}
}
