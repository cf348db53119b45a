//go:build !purego

package bytemask

import "golang.org/x/sys/cpu"

// Fast says the masks come from AVX2 (block_amd64.s), faster than reading a
// string's bytes eight at a time.
var Fast = cpu.X86.HasAVX2

// avx512 says TextBlock takes its AVX-512 form (textBlock512).
var avx512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW

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

// stopsBlock is Stops in AVX2.
//
//go:noescape
func stopsBlock(p *[64]byte) (special, high uint64)

// specialBlocks is Specials in AVX2, for blocks blocks (one or more).
//
//go:noescape
func specialBlocks(p *byte, blocks int, out *uint64)

// textBlock512 is TextBlock's AVX-512 form; TextBlock's assembly jumps to it
// (the declaration gives vet its frame, and the blank use below tells linters
// that assembly calls it).
//
//go:noescape
func textBlock512(w *[67]byte, m *Masks)

var _ = textBlock512

// plainBlocks512 is PlainRun's loop in AVX-512, from p within n bytes (64 or
// more; the three bytes before p readable), its offsets from p.
//
//go:noescape
func plainBlocks512(p *byte, n int) (int, bool)

// Escaper says EscapeBlocks reads blocks here (escapeBlocks512, AVX-512 with
// VBMI and VBMI2): elsewhere it reads none. A variable, for tests to hold the
// other way of writing blocks to the same reading on this machine.
var Escaper = avx512 && cpu.X86.HasAVX512VBMI && cpu.X86.HasAVX512VBMI2 && cpu.X86.HasBMI2 && cpu.X86.HasPOPCNT

// escapeBlocks512 is EscapeBlocks' loop in AVX-512 (and EscapeText's, with
// check): it writes at dst, within room bytes (it stores up to 128 past what
// it has written), the escaping of src's 64-byte blocks within n bytes, and
// returns how many bytes it wrote and read.
//
//go:noescape
func escapeBlocks512(dst *byte, room int, src *byte, n int, check bool) (written, read int)

// utf8Blocks512 is utf8Blocks in AVX-512, the three bytes before p being text
// (it reads them); blocks is at least 1 (its loop counts down to zero).
//
//go:noescape
func utf8Blocks512(p *byte, blocks int) (valid, lineSep bool)
