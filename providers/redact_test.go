package providers_test

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/providers"
)

// Secrets.Reader redacts as Secrets.String does, however the body arrives: a
// secret split between reads, at the start or the end, next to another, or
// containing another is found whole.
func TestSecretsReaderRedactsAcrossReads(t *testing.T) {
	t.Parallel()
	s := providers.SecretsOf("https://user:base-pass-123@x.example/v1", map[string]string{"X-Org": "org-secret"},
		"sk-key-0123456789", "sk-key-0123456789-and-more")
	long := strings.Repeat("a", 40<<10)
	cases := map[string]string{
		"no secret":               "Incorrect API key provided",
		"empty":                   "",
		"the key":                 `{"error":{"message":"Incorrect API key provided: sk-key-0123456789"}}`,
		"at the start and end":    "sk-key-0123456789 and org-secret",
		"side by side":            "org-secretsk-key-0123456789org-secret",
		"one secret in another":   "sk-key-0123456789-and-more, sk-key-0123456789-and-less",
		"a prefix only at end":    "almost sk-key-01234",
		"across a 32 KiB read":    long[:32<<10-4] + "sk-key-0123456789" + long + "base-pass-123",
		"the base URL's userinfo": "dial user:base-pass-123@x.example failed",
	}
	readers := map[string]func(io.Reader) io.Reader{
		"whole": func(r io.Reader) io.Reader { return r }, "one byte": iotest.OneByteReader, "half": iotest.HalfReader,
	}
	for name, in := range cases {
		for how, wrap := range readers {
			t.Run(name+"/"+how, func(t *testing.T) {
				t.Parallel()
				got, err := io.ReadAll(s.Reader(wrap(strings.NewReader(in))))
				require.NoError(t, err)
				require.True(t, s.String(in) == string(got), "%.200q", got)
				require.NotContains(t, string(got), "sk-key-0123456789")
			})
		}
	}
}

func TestSecretsReaderPassesOnItsSourceError(t *testing.T) {
	t.Parallel()
	s := providers.Secrets{"sk-key-0123456789"}
	cut := errors.New("cut")
	r := s.Reader(io.MultiReader(strings.NewReader("key sk-key-0123456789 then sk-key"), iotest.ErrReader(cut)))
	got, err := io.ReadAll(r)
	require.ErrorIs(t, err, cut)
	require.Equal(t, "key [redacted] then sk-key", string(got), "what came before the error is returned first")

	plain := strings.NewReader("x")
	require.Same(t, plain, providers.Secrets(nil).Reader(plain).(*strings.Reader), "no secrets: the body as it is")
}
