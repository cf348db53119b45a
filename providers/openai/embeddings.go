package openai

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/openaijson"
	"github.com/switchyard/switchyard/providers"
)

// MaxEmbeddingsResponseBytes bounds what Switchyard reads of one embeddings
// answer. Embeddings are far larger than chat answers: 2048 inputs (OpenAI's
// limit) of 1536 floats are some 40 MB of JSON, 3072 floats twice that, so the
// bound is 128 MiB instead of MaxResponseBytes; base64 answers are a third of the
// size. Larger answers are unreadable (502).
const MaxEmbeddingsResponseBytes = 128 << 20

// Embed sends POST {base_url}/embeddings (Azure: the deployment's embeddings URL)
// with the client's request, its model replaced by a.Model.
func (c *Client) Embed(ctx context.Context, a providers.Attempt, req *pb.CreateEmbeddingsRequest) (*pb.CreateEmbeddingsResponse, error) {
	if c.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, c.cfg.Timeout, errAttemptTimeout)
		defer cancel()
	}
	body := openaijson.AppendEmbeddingsRequest(make([]byte, 0, 256), req, c.bodyModel(a.Model))
	hr, err := c.newRequest(ctx, http.MethodPost, c.endpoint(a.Model, "embeddings"), providers.Pieces{body}, &providers.Request{Attempt: a})
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(hr)
	if err != nil {
		return nil, c.transportError(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		eb, err := providers.ErrorBody(resp)
		if err != nil {
			return nil, c.transportError(ctx, err)
		}
		return nil, c.parseError(resp.StatusCode, resp.Header, eb)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxEmbeddingsResponseBytes+1))
	if err != nil {
		return nil, c.transportError(ctx, err)
	}
	if len(data) > MaxEmbeddingsResponseBytes {
		return nil, c.unreadable("returned an unreadable response",
			fmt.Errorf("larger than the %d MiB Switchyard reads", MaxEmbeddingsResponseBytes>>20))
	}
	if e := c.hiddenError(data); e != nil {
		return nil, e
	}
	out := &pb.CreateEmbeddingsResponse{}
	if err := openaijson.UnmarshalEmbeddingsResponse(data, out); err != nil {
		return nil, c.unreadable("returned an unreadable response", err)
	}
	if len(out.GetData()) == 0 {
		return nil, &providers.Error{Provider: c.name, Status: http.StatusBadGateway, Err: providers.ErrEmptyResponse,
			Message: "provider returned no embeddings", Code: "empty_response", Kind: providers.KindNoChoices}
	}
	if err := answersEvery(req, out); err != nil {
		return nil, c.unreadable("returned embeddings that do not answer the request", err)
	}
	if out.Object == "" {
		out.Object = "list"
	}
	if out.Model == "" {
		out.Model = a.Model
	}
	if out.Usage == nil {
		out.Usage = &pb.EmbeddingsUsage{}
	}
	return out, nil
}

// answersEvery checks that an answer has one embedding for each of the
// request's inputs, at its index, in the encoding the request asked for (or as
// numbers, which the SDKs that ask for base64 by default take too): an answer
// with an index out of range or twice, a vector missing or empty, or a string
// where numbers were asked for would be passed on as a success it is not.
func answersEvery(req *pb.CreateEmbeddingsRequest, out *pb.CreateEmbeddingsResponse) error {
	n := inputCount(req.GetInput())
	data := out.GetData()
	if len(data) != n {
		return fmt.Errorf("%d embeddings for %d inputs", len(data), n)
	}
	base64 := req.GetEncodingFormat() == "base64"
	seen := make([]bool, n)
	for i, e := range data {
		idx := int(e.GetIndex())
		switch {
		case idx < 0 || idx >= n:
			return fmt.Errorf("data[%d] has index %d, outside the %d inputs", i, idx, n)
		case seen[idx]:
			return fmt.Errorf("data[%d] has index %d, given twice", i, idx)
		case base64 && e.GetEmbeddingBase64() == "" && len(e.GetEmbedding()) == 0:
			// Numbers for base64 pass: the SDKs ask for base64 by default and take
			// numbers from an upstream that ignores encoding_format.
			return fmt.Errorf("data[%d] has no vector", i)
		case !base64 && (len(e.GetEmbedding()) == 0 || e.GetEmbeddingBase64() != ""):
			return fmt.Errorf("data[%d] is not the list of numbers the request asked for", i)
		case e.GetEmbeddingBase64() != "" && !float32sInBase64(e.GetEmbeddingBase64()):
			return fmt.Errorf("data[%d] is not base64 of float32 values", i)
		}
		seen[idx] = true
	}
	return nil
}

// inputCount is how many inputs an embeddings request holds.
func inputCount(in *pb.EmbeddingInput) int {
	switch k := in.GetKind().(type) {
	case *pb.EmbeddingInput_Texts:
		return len(k.Texts.GetValues())
	case *pb.EmbeddingInput_TokenLists:
		return len(k.TokenLists.GetValues())
	}
	return 1
}

// float32sInBase64 reports whether s is standard base64 (padded) of a whole
// number of float32 values, without decoding it.
func float32sInBase64(s string) bool {
	if len(s)%4 != 0 {
		return false
	}
	pad := len(s) - len(strings.TrimRight(s, "="))
	if pad > 2 {
		return false
	}
	for i := range len(s) - pad {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '/') {
			return false
		}
	}
	n := len(s)/4*3 - pad
	return n > 0 && n%4 == 0
}
