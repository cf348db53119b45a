package server

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
)

// A provider that serves no embeddings (heldProvider, as Anthropic's) answers a
// 400 naming it, on both surfaces, without being called.
func TestEmbeddingsOnAProviderWithoutThem(t *testing.T) {
	t.Parallel()
	r := serve(t, func(c *Config) { c.Providers = map[string]ProviderInfo{"up": {Type: "anthropic"}} })
	req, err := http.NewRequest(http.MethodPost, "http://"+r.http+"/v1/embeddings", strings.NewReader(`{"model":"up/m","input":"hi"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer sk-master")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(body))
	require.Contains(t, string(body), `"message":"provider up (type anthropic) does not serve embeddings"`)
	require.Contains(t, string(body), `"code":"unsupported_endpoint"`)

	_, err = pb.NewEmbeddingServiceClient(r.dialGRPC(t)).CreateEmbeddings(masterCtx(),
		&pb.CreateEmbeddingsRequest{Model: "up/m", Input: &pb.EmbeddingInput{Kind: &pb.EmbeddingInput_Text{Text: "hi"}}})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.Contains(t, status.Convert(err).Message(), "does not serve embeddings")
	require.Empty(t, r.p.started, "the provider was never called")
	require.Contains(t, r.logs.String(), `"method":"CreateEmbeddings"`)
}
