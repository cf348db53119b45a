package openai

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLooksLikeError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		want       bool
	}{
		{"an error alone", `{"error":{"message":"boom"}}`, true},
		{"an error as a string", `{"error":"boom"}`, true},
		{"an error beside choices", `{"error":{"code":502},"choices":[{"index":0,"delta":{},"finish_reason":"error"}]}`, true},
		{"a choice finished with error", `{"choices":[{"index":0,"delta":{},"finish_reason":"error"}]}`, true},
		{"the second choice finished with error", `{"choices":[{"finish_reason":"stop"},{"finish_reason":"error"}]}`, true},
		{"an error beside choices of another shape", `{"error":{"code":502},"choices":{"x":1}}`, true},
		{"a null error", `{"error":null,"choices":[{"finish_reason":"stop"}]}`, false},
		{"a finish of stop", `{"choices":[{"finish_reason":"stop"}]}`, false},
		{"error in the content", `{"choices":[{"delta":{"content":"\"error\""}}]}`, false},
		{"error as a member's value", `{"choices":[{"delta":{"content":"x"}}],"note":"error"}`, false},
		{"not JSON", `{"error":`, false},
		{"not an object", `["error"]`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, looksLikeError([]byte(tc.body)))
		})
	}
}
