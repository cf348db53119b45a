package e2e

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/fakeupstream"
)

func sdk(g *gateway, key string) *openai.Client {
	c := openai.NewClient(option.WithBaseURL(g.base), option.WithAPIKey(key), option.WithMaxRetries(0))
	return &c
}

func userMsg(text string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:    "up/gpt-4o",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)},
	}
}

func TestGoSDKChat(t *testing.T) {
	t.Parallel()
	g := start(t, "")
	c := sdk(g, "unused")
	resp, err := c.Chat.Completions.New(context.Background(), userMsg("hi"))
	require.NoError(t, err)
	require.Equal(t, "Hello from the fake upstream!", resp.Choices[0].Message.Content)
	require.Equal(t, "stop", resp.Choices[0].FinishReason)
	require.Equal(t, int64(21), resp.Usage.TotalTokens)
	require.Equal(t, int64(1769092737), resp.Created)
	require.Equal(t, "gpt-4o", resp.Model)

	reqs := g.up.Requests()
	require.Len(t, reqs, 1)
	body := reqs[0].JSON()
	require.Equal(t, "gpt-4o", body["model"], "the upstream receives the provider-local name")
	require.Equal(t, "Bearer sk-upstream", reqs[0].Header.Get("Authorization"))
}

func TestGoSDKBareModelName(t *testing.T) {
	t.Parallel()
	g := start(t, "")
	p := userMsg("hi")
	p.Model = "gpt-4o-mini"
	resp, err := sdk(g, "k").Chat.Completions.New(context.Background(), p)
	require.NoError(t, err)
	require.Equal(t, "gpt-4o-mini", resp.Model)
	require.Equal(t, "gpt-4o-mini", g.up.Requests()[0].JSON()["model"])
}

func TestGoSDKStreamWithUsage(t *testing.T) {
	t.Parallel()
	g := start(t, "")
	p := userMsg("hi")
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := sdk(g, "k").Chat.Completions.NewStreaming(context.Background(), p)
	acc := openai.ChatCompletionAccumulator{}
	chunks := 0
	for stream.Next() {
		chunks++
		acc.AddChunk(stream.Current())
	}
	require.NoError(t, stream.Err())
	require.Greater(t, chunks, 3)
	require.Equal(t, "Hello from the fake upstream!", acc.Choices[0].Message.Content)
	require.Equal(t, "stop", acc.Choices[0].FinishReason)
	require.Equal(t, int64(21), acc.Usage.TotalTokens, "the usage chunk reaches the client")
	so := g.up.Requests()[0].JSON()["stream_options"].(map[string]any)
	require.Equal(t, true, so["include_usage"])
}

func TestGoSDKStreamCutShortIsAnError(t *testing.T) {
	t.Parallel()
	g := start(t, "")
	g.up.Script(fakeupstream.Reply{Text: "one two three four", CutAfter: 3})
	stream := sdk(g, "k").Chat.Completions.NewStreaming(context.Background(), userMsg("hi"))
	got := ""
	for stream.Next() {
		if len(stream.Current().Choices) > 0 {
			got += stream.Current().Choices[0].Delta.Content
		}
	}
	require.Error(t, stream.Err(), "a truncated stream must not end like a complete one")
	require.Contains(t, stream.Err().Error(), "stream_incomplete")
	require.Equal(t, "one two ", got, "everything received before the cut is delivered")
}

func TestGoSDKModels(t *testing.T) {
	t.Parallel()
	g := start(t, "")
	page, err := sdk(g, "k").Models.List(context.Background())
	require.NoError(t, err)
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
		require.Equal(t, "up", m.OwnedBy)
	}
	require.Equal(t, []string{"up/gpt-4o", "up/gpt-4o-mini"}, ids)
}

func TestGoSDKErrors(t *testing.T) {
	t.Parallel()
	g := start(t, "")
	c := sdk(g, "k")

	p := userMsg("hi")
	p.Model = "no-such-model"
	_, err := c.Chat.Completions.New(context.Background(), p)
	var apiErr *openai.Error
	require.True(t, errors.As(err, &apiErr), "%v", err)
	require.Equal(t, http.StatusNotFound, apiErr.StatusCode)
	require.Equal(t, "model_not_found", apiErr.Code)
	require.Equal(t, "model", apiErr.Param)

	g.up.Script(fakeupstream.Reply{Status: http.StatusBadRequest,
		Body: `{"error":{"message":"Invalid 'messages[0].content': too long.","type":"invalid_request_error","param":"messages[0].content","code":"string_above_max_length"}}`})
	_, err = c.Chat.Completions.New(context.Background(), userMsg("hi"))
	require.True(t, errors.As(err, &apiErr))
	require.Equal(t, http.StatusBadRequest, apiErr.StatusCode)
	require.Equal(t, "Invalid 'messages[0].content': too long.", apiErr.Message)
	require.Equal(t, "string_above_max_length", apiErr.Code)
	require.Equal(t, "messages[0].content", apiErr.Param)
	require.Equal(t, "invalid_request_error", apiErr.Type)

	p = userMsg("hi")
	p.Messages = nil
	_, err = c.Chat.Completions.New(context.Background(), p)
	require.True(t, errors.As(err, &apiErr))
	require.Equal(t, http.StatusBadRequest, apiErr.StatusCode)
	require.Equal(t, "messages", apiErr.Param)
}

func TestGoSDKUnknownParamsPassThrough(t *testing.T) {
	t.Parallel()
	g := start(t, "")
	_, err := sdk(g, "k").Chat.Completions.New(context.Background(), userMsg("hi"),
		option.WithJSONSet("top_k", 40), option.WithJSONSet("vendor_ext", map[string]any{"a": []any{1, "x"}}))
	require.NoError(t, err)
	body := g.up.Requests()[0].JSON()
	require.Equal(t, float64(40), body["top_k"])
	require.Equal(t, map[string]any{"a": []any{float64(1), "x"}}, body["vendor_ext"])
}

func TestGoSDKMasterKey(t *testing.T) {
	t.Parallel()
	g := start(t, "  master_key: sk-master\n")
	_, err := sdk(g, "wrong").Chat.Completions.New(context.Background(), userMsg("hi"))
	var apiErr *openai.Error
	require.True(t, errors.As(err, &apiErr))
	require.Equal(t, http.StatusUnauthorized, apiErr.StatusCode)
	require.Equal(t, "invalid_api_key", apiErr.Code)
	require.Zero(t, g.up.Count(), "an unauthenticated call never reaches the upstream")

	_, err = sdk(g, "sk-master").Chat.Completions.New(context.Background(), userMsg("hi"))
	require.NoError(t, err)
	require.Equal(t, "Bearer sk-upstream", g.up.Requests()[0].Header.Get("Authorization"),
		"the client's key is never forwarded upstream")
}

func TestGoSDKRetrieveModel(t *testing.T) {
	t.Parallel()
	g := start(t, "", withProviderYAML("    models: [meta-llama/llama-3]\n"),
		withYAML("virtual_models:\n  - source: chat\n    targets: [{model: up/gpt-4o}]\n"))
	c := sdk(g, "k")
	m3, err := c.Models.Get(context.Background(), "up/meta-llama/llama-3")
	require.NoError(t, err, "ids with a slash in the model name")
	require.Equal(t, "up/meta-llama/llama-3", m3.ID)
	m, err := c.Models.Get(context.Background(), "up/gpt-4o")
	require.NoError(t, err)
	require.Equal(t, "up/gpt-4o", m.ID)
	require.Equal(t, "up", m.OwnedBy)
	m, err = c.Models.Get(context.Background(), "chat")
	require.NoError(t, err)
	require.Equal(t, "switchyard", m.OwnedBy)
	m, err = c.Models.Get(context.Background(), "gpt-4o")
	require.NoError(t, err, "a bare name resolves as in chat")
	require.Equal(t, "up/gpt-4o", m.ID, "to the model it routes to")
	gm, err := pb.NewModelServiceClient(g.conn).GetModel(context.Background(), &pb.GetModelRequest{Model: "meta-llama/llama-3"})
	require.NoError(t, err, "gRPC GetModel resolves bare names too")
	require.Equal(t, "up/meta-llama/llama-3", gm.GetModel().GetId())
	_, err = c.Models.Get(context.Background(), "nope")
	var apiErr *openai.Error
	require.True(t, errors.As(err, &apiErr))
	require.Equal(t, http.StatusNotFound, apiErr.StatusCode)
	require.Equal(t, "model_not_found", apiErr.Code)
}
