//go:build !amd64 || purego

package bytemask

// Fast says the masks come faster than reading a string's bytes eight at a
// time: not here.
const Fast = false

// LoadText sets m to the masks of the 64 bytes at w[3:], Invalid included:
// w[:3] are the three bytes before them (ASCII when there are none).
func (m *Masks) LoadText(w *[67]byte) { *m = textBlockGo(w) }

// TextBlock is LoadText.
func TextBlock(w *[67]byte, m *Masks) { *m = textBlockGo(w) }

// utf8Blocks is never called here (Fast is false).
func utf8Blocks(*byte, int, *byte) (bool, bool) { panic("bytemask: utf8Blocks without AVX2") }

// Stops is the bits of the 64 bytes at p a JSON string encoder stops at: the
// quotes, backslashes and control characters (special), and the bytes of 0x80
// and above (high).
func Stops(p *[64]byte) (special, high uint64) { return stopsGo(p) }

// avx512 is never true here (TextBlock is textBlockGo).
var avx512 = false

// Specials sets out[k] to the special bits Stops gives of the k-th block of
// 64 bytes of p, for every k of out (p holds 64 bytes for each).
func Specials(p []byte, out []uint64) {
	if len(p) < len(out)<<6 {
		panic("bytemask: Specials past the end of p")
	}
	specialsGo(p, out)
}
