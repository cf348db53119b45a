package openaijson

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// Long strings (2-9 KB: many runs of 32 blocks) of mostly plain text come out
// of the blocks as out of the words, and back through encoding/json as they
// went in.
func TestLongStringsBlocksAreTheWords(t *testing.T) { eachEscaper(t, longStringsBlocksAreTheWords) }

func longStringsBlocksAreTheWords(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	plain := []string{"a", "plain text ", "é", "漢字", "✓", "😀", "\x7f", "<&>", `"`, `\`, "\n", "\x01", "\x1f", "\t"}
	for range 1000 {
		var s []byte
		target := 2000 + r.IntN(7000)
		for len(s) < target {
			if r.IntN(50) == 0 {
				s = append(s, plain[8+r.IntN(len(plain)-8)]...)
			} else {
				s = append(s, plain[r.IntN(8)]...)
			}
		}
		for _, strict := range []bool{false, true} {
			got, gotOK := appendStrBy(nil, s, strict, true)
			want, wantOK := appendStrBy(nil, s, strict, false)
			if gotOK != wantOK || string(got) != string(want) {
				t.Fatalf("len %d strict=%v differ", len(s), strict)
			}
		}
		got, _ := appendStrBy(nil, string(s), true, true)
		var back string
		if err := json.Unmarshal(got, &back); err != nil || back != string(s) || !utf8.Valid(s) {
			t.Fatalf("roundtrip failed len %d: %v", len(s), err)
		}
	}
}
