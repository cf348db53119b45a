package providers_test

import (
	"bytes"
	"io"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/providers"
)

// TestPiecesReader: every reader reads the whole body, by Read (any buffer size)
// or WriteTo, and reading one leaves the pieces whole for the next (a retry).
func TestPiecesReader(t *testing.T) {
	p := providers.Pieces{[]byte(`{"a":`), []byte(`[1,2,3]`), nil, []byte(`}`)}
	const want = `{"a":[1,2,3]}`
	require.Equal(t, int64(len(want)), p.Len())
	t.Run("read one byte at a time", func(t *testing.T) {
		got, err := io.ReadAll(iotest.OneByteReader(p.Reader()))
		require.NoError(t, err)
		require.Equal(t, want, string(got))
	})
	t.Run("iotest", func(t *testing.T) {
		require.NoError(t, iotest.TestReader(p.Reader(), []byte(want)))
	})
	t.Run("write to", func(t *testing.T) {
		var b bytes.Buffer
		n, err := p.Reader().(io.WriterTo).WriteTo(&b)
		require.NoError(t, err)
		require.Equal(t, int64(len(want)), n)
		require.Equal(t, want, b.String())
	})
	t.Run("pieces left whole", func(t *testing.T) {
		_, _ = io.ReadAll(p.Reader())
		got, err := io.ReadAll(p.Reader())
		require.NoError(t, err)
		require.Equal(t, want, string(got))
	})
}
