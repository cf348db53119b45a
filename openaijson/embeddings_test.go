package openaijson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
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

// FuzzEmbeddingsResponse holds the decoder of an upstream's embeddings answer
// to encoding/json: what it accepts is valid JSON, and every member it models
// is what encoding/json reads there (a member twice: the last one, as
// encoding/json keeps); invalid JSON is refused as a syntax error (or one
// nested too deep), never decoded.
func FuzzEmbeddingsResponse(f *testing.F) {
	for _, s := range []string{
		`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,-2e-3,3]}],"model":"m","usage":{"prompt_tokens":2,"total_tokens":2}}`,
		`{"data":[{"embedding":"AAAA","index":1},{"embedding":[]}],"usage":null,"x":[{"y":null}]}`,
		`{"data":null,"model":null}`, `{"data":[{"embedding":[1]}],"data":[]}`, `{"usage":{"prompt_tokens":1},"usage":{"total_tokens":3}}`,
		`{"data":[{"embedding":[1,2],"embedding":[3]}]}`, `{"data":[{"embedding":"QQ==","embedding":[1]}]}`,
		`{"data":[{"embedding":[1e39]}]}`, `{"data":[{"index":-1}]}`, `{"data":[{"index":1.5}]}`, `[]`, `{"data":[{}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		resp := &pb.CreateEmbeddingsResponse{}
		err := UnmarshalEmbeddingsResponse(data, resp)
		if !json.Valid(data) {
			require.Error(t, err, "decoded invalid JSON %q", data)
			require.True(t, errors.Is(err, ErrSyntax) || errors.Is(err, ErrTooDeep), "invalid JSON %q: %v", data, err)
			return
		}
		if err != nil {
			var de *Error
			require.True(t, errors.As(err, &de), "errors are *Error: %v", err)
			return
		}
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber()
		var want any
		require.NoError(t, d.Decode(&want))
		if msg := sameEmbeddingsResponse(resp, want); msg != "" {
			t.Fatalf("%s\ninput %q", msg, data)
		}
	})
}

// sameEmbeddingsResponse says how resp differs from encoding/json's reading of
// the same answer ("" when it does not), member by modelled member.
func sameEmbeddingsResponse(resp *pb.CreateEmbeddingsResponse, want any) string {
	top, ok := want.(map[string]any)
	if !ok {
		return "decoded a non-object"
	}
	if msg := sameOptString("object", resp.GetObject(), top["object"]); msg != "" {
		return msg
	}
	if msg := sameOptString("model", resp.GetModel(), top["model"]); msg != "" {
		return msg
	}
	switch u := top["usage"].(type) {
	case nil:
		if resp.Usage != nil {
			return "usage: decoded from null or nothing"
		}
	case map[string]any:
		if resp.Usage == nil {
			return "usage: dropped"
		}
		if msg := sameCount("usage.prompt_tokens", resp.Usage.GetPromptTokens(), u["prompt_tokens"]); msg != "" {
			return msg
		}
		if msg := sameCount("usage.total_tokens", resp.Usage.GetTotalTokens(), u["total_tokens"]); msg != "" {
			return msg
		}
	default:
		return fmt.Sprintf("usage: decoded from %T", u)
	}
	var list []any
	switch d := top["data"].(type) {
	case nil:
	case []any:
		list = d
	default:
		return fmt.Sprintf("data: decoded from %T", d)
	}
	if len(resp.Data) != len(list) {
		return fmt.Sprintf("data: %d embeddings, encoding/json reads %d", len(resp.Data), len(list))
	}
	for i, v := range list {
		e, ok := v.(map[string]any)
		if !ok {
			return fmt.Sprintf("data[%d]: decoded from %T", i, v)
		}
		got := resp.Data[i]
		if msg := sameOptString(fmt.Sprintf("data[%d].object", i), got.GetObject(), e["object"]); msg != "" {
			return msg
		}
		if msg := sameCount(fmt.Sprintf("data[%d].index", i), got.GetIndex(), e["index"]); msg != "" {
			return msg
		}
		switch emb := e["embedding"].(type) {
		case nil:
			if got.EmbeddingBase64 != "" || len(got.Embedding) > 0 {
				return fmt.Sprintf("data[%d].embedding: decoded from nothing", i)
			}
		case string:
			if got.EmbeddingBase64 != emb || len(got.Embedding) > 0 {
				return fmt.Sprintf("data[%d].embedding: %q and %v, want the string %q", i, got.EmbeddingBase64, got.Embedding, emb)
			}
		case []any:
			if got.EmbeddingBase64 != "" || len(got.Embedding) != len(emb) {
				return fmt.Sprintf("data[%d].embedding: %q and %d numbers, want %d numbers", i, got.EmbeddingBase64, len(got.Embedding), len(emb))
			}
			for j, n := range emb {
				num, ok := n.(json.Number)
				if !ok {
					return fmt.Sprintf("data[%d].embedding[%d]: decoded from %T", i, j, n)
				}
				f, err := strconv.ParseFloat(num.String(), 32)
				if err != nil || float32(f) != got.Embedding[j] {
					return fmt.Sprintf("data[%d].embedding[%d]: %v, want %s", i, j, got.Embedding[j], num)
				}
			}
		default:
			return fmt.Sprintf("data[%d].embedding: decoded from %T", i, emb)
		}
	}
	return ""
}

func sameOptString(name, got string, want any) string {
	switch w := want.(type) {
	case nil:
		if got != "" {
			return name + ": decoded from null or nothing"
		}
	case string:
		if got != w {
			return fmt.Sprintf("%s: %q, want %q", name, got, w)
		}
	default:
		return fmt.Sprintf("%s: decoded from %T", name, want)
	}
	return ""
}

func sameCount(name string, got int32, want any) string {
	switch w := want.(type) {
	case nil:
		if got != 0 {
			return name + ": decoded from null or nothing"
		}
	case json.Number:
		f, err := strconv.ParseFloat(w.String(), 64)
		if err != nil || f != float64(got) {
			return fmt.Sprintf("%s: %d, want %s", name, got, w)
		}
	default:
		return fmt.Sprintf("%s: decoded from %T", name, want)
	}
	return ""
}
