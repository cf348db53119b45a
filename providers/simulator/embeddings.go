package simulator

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"strconv"
	"strings"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/providers"
)

// EmbeddingModel is the embedding model the simulator lists by default.
const EmbeddingModel = "sim-embed-1"

// DefaultDimensions is the length of the simulator's vectors when neither its
// config nor the request sets one.
const DefaultDimensions = 256

// MaxDimensions bounds a request's dimensions.
const MaxDimensions = 8192

// Embed answers with one deterministic unit vector per input: the same input, model
// and dimensions always give the same vector (seeded by a hash of them). Usage is
// a token estimate: one per word of a text, one per token of a token array.
func (s *Simulator) Embed(ctx context.Context, a providers.Attempt, req *pb.CreateEmbeddingsRequest) (*pb.CreateEmbeddingsResponse, error) {
	dims := s.cfg.Dimensions
	if d := req.GetDimensions(); req.Dimensions != nil {
		if d < 1 || d > MaxDimensions {
			return nil, &providers.Error{Provider: s.cfg.Name, Status: http.StatusBadRequest, Type: "invalid_request_error",
				Param: "dimensions", Message: fmt.Sprintf("dimensions must be between 1 and %d; got %d", MaxDimensions, d)}
		}
		dims = int(d)
	}
	base64Out := false
	switch f := req.GetEncodingFormat(); f {
	case "", "float":
	case "base64":
		base64Out = true
	default:
		return nil, &providers.Error{Provider: s.cfg.Name, Status: http.StatusBadRequest, Type: "invalid_request_error",
			Param: "encoding_format", Message: fmt.Sprintf("encoding_format must be 'float' or 'base64'; got '%s'", f)}
	}
	if err := sleep(ctx, s.cfg.TimeToFirstToken); err != nil {
		return nil, err
	}
	inputs, tokens := embeddingInputs(req.GetInput())
	out := &pb.CreateEmbeddingsResponse{Object: "list", Model: a.Model,
		Usage: &pb.EmbeddingsUsage{PromptTokens: int32(tokens), TotalTokens: int32(tokens)}}
	for i, in := range inputs {
		e := &pb.Embedding{Object: "embedding", Index: int32(i)}
		v := vector(a.Model+"\x00"+strconv.Itoa(dims)+"\x00"+in, dims)
		if base64Out {
			e.EmbeddingBase64 = encodeFloats(v)
		} else {
			e.Embedding = v
		}
		out.Data = append(out.Data, e)
	}
	return out, nil
}

// embeddingInputs flattens the input into one key per embedding (a text, or a
// token array written out) and estimates its tokens.
func embeddingInputs(in *pb.EmbeddingInput) (keys []string, tokens int) {
	switch k := in.GetKind().(type) {
	case *pb.EmbeddingInput_Text:
		return []string{k.Text}, len(strings.Fields(k.Text))
	case *pb.EmbeddingInput_Texts:
		for _, t := range k.Texts.GetValues() {
			keys, tokens = append(keys, t), tokens+len(strings.Fields(t))
		}
	case *pb.EmbeddingInput_Tokens:
		return []string{tokenKey(k.Tokens.GetValues())}, len(k.Tokens.GetValues())
	case *pb.EmbeddingInput_TokenLists:
		for _, l := range k.TokenLists.GetValues() {
			keys, tokens = append(keys, tokenKey(l.GetValues())), tokens+len(l.GetValues())
		}
	}
	return keys, tokens
}

func tokenKey(ts []int64) string {
	b := make([]byte, 0, 1+len(ts)*6)
	b = append(b, '\x01') // never a text's key
	for _, t := range ts {
		b = strconv.AppendInt(b, t, 10)
		b = append(b, ',')
	}
	return string(b)
}

// vector is a deterministic unit vector of n dimensions seeded by key.
func vector(key string, n int) []float32 {
	h := fnv.New64a()
	h.Write([]byte(key))
	x := h.Sum64() | 1
	v := make([]float32, n)
	var sum float64
	for i := range v {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		f := float64(x>>11)/float64(1<<53)*2 - 1
		v[i] = float32(f)
		sum += f * f
	}
	norm := math.Sqrt(sum)
	for i := range v {
		v[i] = float32(float64(v[i]) / norm)
	}
	return v
}

// encodeFloats is OpenAI's base64 encoding: little-endian float32s.
func encodeFloats(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return base64.StdEncoding.EncodeToString(b)
}
