package anthropic

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMergeBetas(t *testing.T) {
	cases := []struct {
		name               string
		configured, client []string
		want               []string
	}{
		{"client only", nil, []string{"a", "b"}, []string{"a", "b"}},
		{"configured first, no repeats", []string{"a,c"}, []string{"c", " b "}, []string{"a", "c", "b"}},
		{"empty pieces dropped", []string{""}, []string{"a,,"}, []string{"a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, mergeBetas(tc.configured, tc.client))
		})
	}
}
