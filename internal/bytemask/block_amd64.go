//go:build !purego

package bytemask

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// Fast says the masks come from AVX2 (block_amd64.s), faster than reading a
// string's bytes eight at a time.
var Fast = cpu.X86.HasAVX2

// avx512 says TextBlock takes its AVX-512 form (textBlock512).
var avx512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW

// LoadText sets m to the masks of the 64 bytes at w[3:], Invalid included:
// w[:3] are the three bytes before them (ASCII when there are none). (m is
// filled in place: a Masks returned by value is copied sixteen bytes at a time
// from the eight-byte stores that wrote it, and the stalled loads cost more
// than the compares.)
func (m *Masks) LoadText(w *[67]byte) {
	if Fast {
		TextBlock(w, m)
		return
	}
	*m = textBlockGo(w)
}

// TextBlock is LoadText without the check of the machine: only where Fast
// (a scanner's loop calls it once per block; LoadText is a call more).
//
//go:noescape
func TextBlock(w *[67]byte, m *Masks)

// utf8Blocks says whether no byte of the blocks (64 bytes each) at p shows a
// UTF-8 error, and whether a byte of them ends U+2028 or U+2029; the 32 bytes
// before the first are those at before, or ASCII when it is nil.
//
//go:noescape
func utf8Blocks(p *byte, blocks int, before *byte) (valid, lineSep bool)

// Stops is the bits of the 64 bytes at p a JSON string encoder stops at: the
// quotes, backslashes and control characters (special), and the bytes of 0x80
// and above (high).
func Stops(p *[64]byte) (special, high uint64) {
	if Fast {
		return stopsBlock(p)
	}
	return stopsGo(p)
}

//go:noescape
func stopsBlock(p *[64]byte) (special, high uint64)

// Specials sets out[k] to the special bits Stops gives of the k-th block of
// 64 bytes of p, for every k of out (p holds 64 bytes for each).
func Specials(p []byte, out []uint64) {
	if len(p) < len(out)<<6 {
		panic("bytemask: Specials past the end of p")
	}
	if Fast && len(out) > 0 {
		specialBlocks(unsafe.SliceData(p), len(out), unsafe.SliceData(out))
		return
	}
	specialsGo(p, out)
}

//go:noescape
func specialBlocks(p *byte, blocks int, out *uint64)

// textBlock512 is TextBlock's AVX-512 form; TextBlock's assembly jumps to it
// (the declaration gives vet its frame, and the blank use below tells linters
// that assembly calls it).
//
//go:noescape
func textBlock512(w *[67]byte, m *Masks)

var _ = textBlock512
