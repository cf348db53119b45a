//go:build !amd64 || purego

package bytemask

// Fast says the masks come faster than reading a string's bytes eight at a
// time: not here.
const Fast = false

// TextBlock is LoadText.
func TextBlock(w *[67]byte, m *Masks) { *m = textBlockGo(w) }

// avx512 is never true here (TextBlock is textBlockGo).
var avx512 = false

// The assembly's functions are never called here (Fast is false).

func utf8Blocks(*byte, int, *byte) (bool, bool) { panic("bytemask: utf8Blocks without AVX2") }

func stopsBlock(*[64]byte) (uint64, uint64) { panic("bytemask: stopsBlock without AVX2") }

func specialBlocks(*byte, int, *uint64) { panic("bytemask: specialBlocks without AVX2") }

func plainBlocks512(*byte, int) (int, bool) { panic("bytemask: plainBlocks512 without AVX-512") }

// Escaper says EscapeBlocks reads blocks here: never (a variable, as where it
// can be true).
var Escaper = false

func escapeBlocks512(*byte, int, *byte, int, bool) (int, int) {
	panic("bytemask: escapeBlocks512 without AVX-512")
}

func utf8Blocks512(*byte, int) (bool, bool) { panic("bytemask: utf8Blocks512 without AVX-512") }
