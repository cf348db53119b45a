package bytemask

import (
	"math/rand/v2"
	"testing"
)

// naive is Block byte by byte.
func naive(p *[64]byte) Masks {
	var m Masks
	for i, b := range p {
		bit := uint64(1) << i
		if b == '"' {
			m.Quote |= bit
		}
		if b == '\\' {
			m.Backslash |= bit
		}
		if b < 0x20 {
			m.Control |= bit
		}
		if b >= 0x80 {
			m.High |= bit
		}
	}
	return m
}

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
	near := []byte{'"', '\\', 0x00, 0x1F, 0x20, 0x21, 0x5B, 0x5D, 0x7F, 0x80, 0xBF, 0xE0, 0xFF, 'a', 0x01, 0x81}
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

func TestBlockMatchesBytes(t *testing.T) {
	for _, impl := range []struct {
		name string
		f    func(*[64]byte) Masks
	}{{"Block", Block}, {"blockGo", blockGo}} {
		t.Run(impl.name, func(t *testing.T) {
			for _, p := range blocks() {
				if got, want := impl.f(&p), naive(&p); got != want {
					t.Fatalf("%q:\n got %+v\nwant %+v", p[:], got, want)
				}
			}
		})
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
	for i := range 2000 {
		// sparse and dense runs of backslashes
		cases["random "+string(rune('a'+i%26))+string(rune('a'+i/26%26))+string(rune('0'+i/676))] = r.Uint64()&r.Uint64() | r.Uint64()&r.Uint64()&r.Uint64()
	}
	for name, bs := range cases {
		t.Run(name, func(t *testing.T) {
			if got, want := Escaped(bs), escapedNaive(bs); got != want {
				t.Fatalf("Escaped(%064b)\n = %064b\nwant %064b", bs, got, want)
			}
		})
	}
}

func BenchmarkBlock(b *testing.B) {
	var p [64]byte
	for i := range p {
		p[i] = byte(i * 7)
	}
	b.SetBytes(64)
	b.Run("Block", func(b *testing.B) {
		var acc uint64
		for b.Loop() {
			acc += Block(&p).Quote
		}
		_ = acc
	})
	b.Run("blockGo", func(b *testing.B) {
		var acc uint64
		for b.Loop() {
			acc += blockGo(&p).Quote
		}
		_ = acc
	})
}
