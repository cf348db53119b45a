package simulator

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/providers"
)

func TestEmbedIsDeterministicAndBase64MatchesTheFloats(t *testing.T) {
	t.Parallel()
	s := New(Config{Name: "sim", Dimensions: 6})
	a := providers.Attempt{Model: EmbeddingModel}
	texts := &pb.CreateEmbeddingsRequest{Input: &pb.EmbeddingInput{Kind: &pb.EmbeddingInput_Texts{
		Texts: &pb.StringList{Values: []string{"one two", "three"}}}}}
	first, err := s.Embed(context.Background(), a, texts)
	require.NoError(t, err)
	again, err := s.Embed(context.Background(), a, texts)
	require.NoError(t, err)
	require.Equal(t, first.GetData()[0].GetEmbedding(), again.GetData()[0].GetEmbedding())
	require.NotEqual(t, first.GetData()[0].GetEmbedding(), first.GetData()[1].GetEmbedding())
	require.Len(t, first.GetData()[0].GetEmbedding(), 6)
	require.Equal(t, int32(3), first.GetUsage().GetPromptTokens(), "a token per word")
	require.Equal(t, int32(1), first.GetData()[1].GetIndex())

	format := "base64"
	texts.EncodingFormat = &format
	b64, err := s.Embed(context.Background(), a, texts)
	require.NoError(t, err)
	raw, err := base64.StdEncoding.DecodeString(b64.GetData()[0].GetEmbeddingBase64())
	require.NoError(t, err)
	require.Len(t, raw, 4*6)
	for i, f := range first.GetData()[0].GetEmbedding() {
		require.Equal(t, f, math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])))
	}

	tokens := &pb.CreateEmbeddingsRequest{Input: &pb.EmbeddingInput{Kind: &pb.EmbeddingInput_TokenLists{
		TokenLists: &pb.TokenLists{Values: []*pb.TokenList{{Values: []int64{1, 2, 3}}, {Values: []int64{4}}}}}}}
	resp, err := s.Embed(context.Background(), a, tokens)
	require.NoError(t, err)
	require.Len(t, resp.GetData(), 2)
	require.Equal(t, int32(4), resp.GetUsage().GetTotalTokens(), "a token per token")

	dims := int32(0)
	tokens.Dimensions = &dims
	_, err = s.Embed(context.Background(), a, tokens)
	var pe *providers.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, 400, pe.Status)
	require.Equal(t, "dimensions", pe.Param)
}

func TestModelsListTheEmbeddingModels(t *testing.T) {
	t.Parallel()
	got, err := New(Config{}).Models(context.Background())
	require.NoError(t, err)
	require.Equal(t, []string{Model, EmbeddingModel}, got)
	got, err = New(Config{Models: []string{"a"}, EmbeddingModels: []string{"e", "a"}}).Models(context.Background())
	require.NoError(t, err)
	require.Equal(t, []string{"a", "e"}, got)
}
