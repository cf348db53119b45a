package reqid

import (
	"encoding/hex"
	"testing"
	"time"
)

func TestNew(t *testing.T) {
	base := time.UnixMilli(1_780_000_000_123)
	cases := []struct {
		name   string
		a, b   time.Time
		before bool // a's id sorts before b's
	}{
		{"a millisecond apart", base, base.Add(time.Millisecond), true},
		{"a day apart", base, base.Add(24 * time.Hour), true},
		{"across a byte's carry", time.UnixMilli(0xFF_FFFF), time.UnixMilli(0x100_0000), true},
		{"later first", base.Add(time.Second), base, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, b := New(tc.a), New(tc.b)
			for _, id := range []string{a, b} {
				if raw, err := hex.DecodeString(id); err != nil || len(raw) != 12 {
					t.Fatalf("%q is not 24 hex digits", id)
				}
			}
			if (a < b) != tc.before {
				t.Fatalf("%s (%v) and %s (%v) sort the wrong way", a, tc.a, b, tc.b)
			}
		})
	}
	t.Run("the same millisecond", func(t *testing.T) {
		seen := map[string]bool{}
		for i := 0; i < 1000; i++ {
			id := New(base)
			if seen[id] || id[:12] != "019e7044887b" {
				t.Fatalf("id %s: repeated, or its time part is not the millisecond's", id)
			}
			seen[id] = true
		}
	})
}
