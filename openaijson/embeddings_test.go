package openaijson

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
)

func TestEmbeddingsRequestRoundTrip(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in, out string }{
		{"text", `{"model":"m","input":"hello"}`, `{"input":"hello","model":"up"}`},
		{"texts", `{"input":["a","b"],"model":"m"}`, `{"input":["a","b"],"model":"up"}`},
		{"tokens", `{"input":[1,2,3],"model":"m"}`, `{"input":[1,2,3],"model":"up"}`},
		{"token arrays", `{"input":[[1,2],[3]],"model":"m"}`, `{"input":[[1,2],[3]],"model":"up"}`},
		{"every member, unknown ones kept", `{"input":"x","model":"m","encoding_format":"base64","dimensions":256,"user":"u","zeta":{"a":[1]},"alpha":true}`,
			`{"input":"x","model":"up","encoding_format":"base64","dimensions":256,"user":"u","alpha":true,"zeta":{"a":[1]}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := &pb.CreateEmbeddingsRequest{}
			require.NoError(t, UnmarshalEmbeddingsRequest([]byte(tc.in), req))
			require.Equal(t, "m", req.GetModel())
			require.Equal(t, tc.out, string(AppendEmbeddingsRequest(nil, req, "up")))
			require.Equal(t, "m", req.GetModel(), "the request is not modified")
		})
	}
}

func TestEmbeddingsRequestErrorsNameTheParam(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in, param string }{
		{"object input", `{"input":{"a":1}}`, "input"},
		{"number input", `{"input":3}`, "input"},
		{"mixed texts", `{"input":["a",1]}`, "input[1]"},
		{"mixed tokens", `{"input":[1,"a"]}`, "input[1]"},
		{"fractional token", `{"input":[1,2.5]}`, "input[1]"},
		{"bad token array", `{"input":[[1],[2,"x"]]}`, "input[1][1]"},
		{"dimensions a string", `{"input":"x","dimensions":"8"}`, "dimensions"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := UnmarshalEmbeddingsRequest([]byte(tc.in), &pb.CreateEmbeddingsRequest{})
			var de *Error
			require.True(t, errors.As(err, &de), "%v", err)
			require.Equal(t, tc.param, de.Param, de.Error())
		})
	}
	for _, bad := range []string{`{"input":"x"`, `[]`, ``, `{"input":[1,]}`} {
		var de *Error
		require.True(t, errors.As(UnmarshalEmbeddingsRequest([]byte(bad), &pb.CreateEmbeddingsRequest{}), &de), bad)
		require.Error(t, de.Err, "a whole-input error: %q", bad)
	}
}

// A large token input is read as integers, not as a google.protobuf.Value each:
// the values budget (which would refuse this body) does not apply to it.
func TestLargeTokenInputIsNotHeldToTheValuesBudget(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(`{"model":"m","input":[`)
	const n = 600_000 // ~2.4 MB: past ValuesFloor + len/BytesPerValue (~215 k)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("123")
	}
	b.WriteString(`]}`)
	req := &pb.CreateEmbeddingsRequest{}
	require.NoError(t, UnmarshalEmbeddingsRequest([]byte(b.String()), req))
	require.Len(t, req.GetInput().GetTokens().GetValues(), n)
	// Unknown members still are: the same bytes under another name are refused.
	err := UnmarshalEmbeddingsRequest([]byte(strings.Replace(b.String(), `"input"`, `"other"`, 1)), req)
	require.ErrorIs(t, err, ErrTooManyValues)
}

func TestEmbeddingsResponseFloatAndBase64(t *testing.T) {
	t.Parallel()
	in := `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.0023064255,-0.009327292,1e-7],"x":1},` +
		`{"object":"embedding","index":1,"embedding":"AAAAPwAAgL4AAAA+"}],"model":"text-embedding-3-small",` +
		`"usage":{"prompt_tokens":8,"total_tokens":8,"extra":{}},"system_fingerprint":null}`
	resp := &pb.CreateEmbeddingsResponse{}
	require.NoError(t, UnmarshalEmbeddingsResponse([]byte(in), resp))
	require.Equal(t, []float32{0.0023064255, -0.009327292, 1e-7}, resp.GetData()[0].GetEmbedding())
	require.Equal(t, "AAAAPwAAgL4AAAA+", resp.GetData()[1].GetEmbeddingBase64(), "base64 kept as it came")
	require.Equal(t, int32(8), resp.GetUsage().GetPromptTokens())
	require.Equal(t, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.0023064255,-0.009327292,1e-07]},`+
		`{"object":"embedding","index":1,"embedding":"AAAAPwAAgL4AAAA+"}],"model":"text-embedding-3-small",`+
		`"usage":{"prompt_tokens":8,"total_tokens":8}}`, string(AppendEmbeddingsResponse(nil, resp)))

	for _, bad := range []string{`{"data":[{"embedding":{}}]}`, `{"data":[{"embedding":[1e99]}]}`, `{"data":[1]}`, `{"data":`} {
		require.Error(t, UnmarshalEmbeddingsResponse([]byte(bad), resp), bad)
	}
}

// FuzzEmbeddingsRequest: the decoder never panics, agrees with encoding/json on
// what is JSON, and what it decodes is written back in a form it decodes to the
// same request.
func FuzzEmbeddingsRequest(f *testing.F) {
	for _, s := range []string{`{"model":"m","input":"hello"}`, `{"input":["a","b"],"user":"u"}`, `{"input":[1,2,3]}`,
		`{"input":[[1,2],[3]],"dimensions":8,"x":{"y":[null]}}`, `{"input":[]}`, `{"input":null}`, `{"input":["a",1]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req := &pb.CreateEmbeddingsRequest{}
		err := UnmarshalEmbeddingsRequest(data, req)
		if err != nil {
			var de *Error
			require.True(t, errors.As(err, &de), "errors are *Error: %v", err)
			return
		}
		require.True(t, json.Valid(data), "decoded invalid JSON: %q", data)
		out := AppendEmbeddingsRequest(nil, req, req.GetModel())
		again := &pb.CreateEmbeddingsRequest{}
		require.NoError(t, UnmarshalEmbeddingsRequest(out, again), "%s", out)
		require.True(t, proto.Equal(req, again), "%s\n%v\n%v", out, req, again)
	})
}
