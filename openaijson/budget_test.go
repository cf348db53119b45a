package openaijson

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
)

// wideBody is a chat request whose unknown member "x" is an array of n zeros.
func wideBody(n int) []byte {
	return []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"x":[` +
		strings.TrimSuffix(strings.Repeat("0,", n), ",") + `]}`)
}

// The values budget: a request of tiny values builds at most ValuesFloor + one per
// BytesPerValue bytes of Values, so its memory is a small multiple of its size;
// past it, a clear error naming the budget. Under it, nothing changes.
func TestValuesBudget(t *testing.T) {
	cases := []struct {
		name   string
		values int
		ok     bool
	}{
		{"a few", 10, true},
		{"the floor's worth in a small body", ValuesFloor - 10, true},
		{"4 million zeros in 8 MB", 4_000_000, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := wideBody(tc.values)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			err := Unmarshal(body, &pb.ChatCompletionRequest{})
			runtime.ReadMemStats(&after)
			if tc.ok {
				require.NoError(t, err)
				return
			}
			require.True(t, errors.Is(err, ErrTooManyValues), "%v", err)
			require.Contains(t, err.Error(), "more JSON values than 65536 plus one per 16 bytes of input")
			require.Contains(t, err.Error(), "in 'x'")
			allocated := after.TotalAlloc - before.TotalAlloc
			require.Less(t, allocated, uint64(10*len(body)), "allocated %d bytes for a %d-byte body", allocated, len(body))
		})
	}
}

// The chunk and completion decoders (what upstreams send) keep the same budget.
func TestValuesBudgetInUpstreamDecoders(t *testing.T) {
	zeros := strings.TrimSuffix(strings.Repeat("0,", 4_000_000), ",")
	chunk := []byte(`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"x":[` + zeros + `]}`)
	require.ErrorIs(t, UnmarshalChunk(chunk, &pb.ChatCompletionChunk{}), ErrTooManyValues)
	completion := []byte(`{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[],"x":[` + zeros + `]}`)
	require.ErrorIs(t, UnmarshalCompletion(completion, &pb.ChatCompletion{}), ErrTooManyValues)
}
