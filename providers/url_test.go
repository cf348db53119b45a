package providers_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/providers"
)

func TestDisplayURLNeverShowsUserinfo(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in, want string }{
		{"plain", "https://api.openai.com/v1", "https://api.openai.com/v1"},
		{"user and password", "https://alice:s3cret-pass@llm.example.com:8443/v1", "https://llm.example.com:8443/v1"},
		{"user only", "http://token-abc@localhost:8000/v1", "http://localhost:8000/v1"},
		{"escaped password", "https://u:p%40ss%2Fword@h/v1", "https://h/v1"},
		{"unparseable", "http://u:pa ss@[bad/v1", "http://[bad/v1"},
		{"unparseable, '/' in the password", "http://user:pa/ss@host:99999/v1", "http://host:99999/v1"},
		{"no scheme", "user:secret-pw@host/v1", "host/v1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := providers.DisplayURL(tc.in)
			require.Equal(t, tc.want, got)
			require.NotContains(t, got, "@")
		})
	}
}
