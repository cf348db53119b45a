package bytemask

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// escapeCases are valid UTF-8 texts without U+2028 or U+2029, with each thing
// EscapeBlocks escapes or stops at placed across the blocks' edges.
func escapeCases() map[string][]byte {
	prose := strings.Repeat("The gateway forwards each request; Café, naïve, 漢字, ✓ 😀. ", 40)
	dense := strings.Repeat("line \"one\"\n\tpath C:\\dir\\x\r\n", 60)
	return map[string][]byte{
		"prose":                   []byte(prose),
		"dense escapes":           []byte(dense),
		"all quotes":              bytes.Repeat([]byte{'"'}, 640),
		"all backslashes":         bytes.Repeat([]byte{'\\'}, 640),
		"all newlines":            bytes.Repeat([]byte{'\n'}, 640),
		"escapes in one half":     []byte(strings.Repeat(strings.Repeat("a", 32)+strings.Repeat(`"`, 32), 10)),
		"a control character":     insertAt(dense, 700, "\x01"),
		"a backspace":             insertAt(prose, 130, "\b"),
		"a form feed at an edge":  insertAt(prose, 128, "\f"),
		"a nul in the first":      insertAt(dense, 0, "\x00"),
		"a unit separator":        insertAt(dense, 1000, "\x1f"),
		"delete is not a control": []byte(strings.Repeat("x\x7f\"", 300)),
		"less than a block":       []byte(dense[:63]),
		"a control in the last":   insertAt(dense[:1000], 990, "\x02"),
		"a tab at the very end":   []byte(dense[:129] + "\t"),
		"empty":                   nil,
	}
}

// TestEscapeBlocksIsTheBytesReading: EscapeBlocks writes and reads what the
// byte-by-byte reading does, in every case, after what b held, whatever room
// b has (it stops where the room runs out).
func TestEscapeBlocksIsTheBytesReading(t *testing.T) {
	if !Escaper {
		t.Skip("EscapeBlocks reads nothing without AVX-512 VBMI2")
	}
	for name, s := range escapeCases() {
		t.Run(name, func(t *testing.T) {
			for _, room := range []int{0, 1, 127, 128, 200, len(s), 2*len(s) + 128} {
				sameEscaping(t, s, room)
			}
		})
	}
}

// sameEscaping holds EscapeBlocks to escapeBlocksGo on s, after a prefix, with
// room bytes of capacity past it: it reads what the bytes' reading reads,
// less where the room ran out (then less than 128 bytes of it are left), and
// writes what the bytes' reading writes of what it read, never past b's
// capacity.
func sameEscaping(t *testing.T, s []byte, room int) {
	t.Helper()
	whole := bytes.Repeat([]byte{0xAA}, 3+room+256) // what lies past b's capacity must stay as it is
	b := whole[: 3 : 3+room]
	copy(b, "ab\"")
	got, gotRead := EscapeBlocks(b, s)
	if past := whole[3+room:]; !bytes.Equal(past, bytes.Repeat([]byte{0xAA}, len(past))) {
		t.Fatalf("room %d: written past b's capacity", room)
	}
	_, wantRead := escapeBlocksGo([]byte("ab\""), s)
	want, _ := escapeBlocksGo([]byte("ab\""), s[:gotRead])
	switch {
	case &got[:1][0] != &b[:1][0] || cap(got) != cap(b):
		t.Fatalf("room %d: b was grown", room)
	case gotRead > wantRead || gotRead < wantRead && cap(got)-len(got) >= 128:
		t.Fatalf("room %d: read %d (%d left), the bytes' reading %d", room, gotRead, cap(got)-len(got), wantRead)
	case gotRead < len(s) && gotRead%64 != 0:
		t.Fatalf("room %d: stopped at %d, inside a block", room, gotRead)
	case !bytes.Equal(got, want):
		t.Fatalf("room %d: read %d, wrote\n%q\nthe bytes' reading:\n%q", room, gotRead, got, want)
	}
	if room >= 2*len(s)+128 && gotRead != wantRead {
		t.Fatalf("room %d: read %d of the %d the bytes' reading reads", room, gotRead, wantRead)
	}
}

// TestEscapeBlocksOfEveryControlCharacter: each control character, at the
// start, the middle and the end of texts of every length to two blocks, is
// escaped or stops the writing as the bytes' reading does.
func TestEscapeBlocksOfEveryControlCharacter(t *testing.T) {
	if !Escaper {
		t.Skip("EscapeBlocks reads nothing without AVX-512 VBMI2")
	}
	for c := range byte(0x20) {
		t.Run(strconv.Itoa(int(c)), func(t *testing.T) {
			for n := 1; n <= 130; n++ {
				for _, at := range []int{0, n / 2, n - 1} {
					s := bytes.Repeat([]byte{'x'}, n)
					s[at] = c
					sameEscaping(t, s, 2*n+128)
					sameEscaping(t, s, 128)
				}
			}
		})
	}
}

// TestEscapeBlocksOfRandomText: random valid text of the characters that
// matter, at every length to a few blocks.
func TestEscapeBlocksOfRandomText(t *testing.T) {
	if !Escaper {
		t.Skip("EscapeBlocks reads nothing without AVX-512 VBMI2")
	}
	r := rand.New(rand.NewPCG(7, 11))
	pieces := []string{"a", "b", " ", `"`, `\`, "\n", "\r", "\t", "é", "漢", "😀", "\x7f", "\x01", "\b"}
	for n := range 400 {
		var sb strings.Builder
		for sb.Len() < n {
			p := pieces[r.IntN(len(pieces))]
			if (p == "\x01" || p == "\b") && r.IntN(20) != 0 {
				continue
			}
			sb.WriteString(p)
		}
		sameEscaping(t, []byte(sb.String()), r.IntN(3*n+200))
	}
}

// FuzzEscapeBlocks holds EscapeBlocks to the bytes' reading on any valid
// UTF-8 without U+2028 or U+2029.
func FuzzEscapeBlocks(f *testing.F) {
	for _, s := range escapeCases() {
		f.Add(s, uint16(len(s)))
	}
	f.Fuzz(func(t *testing.T, s []byte, room uint16) {
		if valid, sep := wantText(s); !Escaper || !valid || sep {
			t.Skip()
		}
		sameEscaping(t, s, int(room))
	})
}

func BenchmarkEscapeBlocks(b *testing.B) {
	s := escapeCases()["dense escapes"]
	for len(s) < 512<<10 {
		s = append(s, s...)
	}
	out := make([]byte, 0, 2*len(s)+128)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		out, _ = EscapeBlocks(out[:0], s)
	}
}
