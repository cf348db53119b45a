package e2e

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
	"github.com/stretchr/testify/require"
)

// The default set-up demonstrates tool calling: offered a tool, the simulator
// calls it (arguments that fit its schema), in one piece or streamed in pieces
// exactly as the OpenAI SDK accumulates them; given the tool's result, it answers.
func TestSimulatorCallsTools(t *testing.T) {
	t.Parallel()
	g := start(t, "", withYAML("  sim:\n    type: simulator\n"))
	c := sdk(g, "k")
	weather := openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name: "get_weather",
		Parameters: shared.FunctionParameters{
			"type": "object",
			"properties": map[string]any{
				"city": map[string]any{"type": "string"},
				"unit": map[string]any{"type": "string", "enum": []string{"celsius", "fahrenheit"}},
				"days": map[string]any{"type": "integer"},
			},
			"required": []string{"city"},
		},
	})
	params := openai.ChatCompletionNewParams{
		Model:    "sim/sim-1",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("weather in Paris?")},
		Tools:    []openai.ChatCompletionToolUnionParam{weather},
	}
	checkArgs := func(t *testing.T, raw string) {
		var args map[string]any
		require.NoError(t, json.Unmarshal([]byte(raw), &args), "arguments are a JSON object: %s", raw)
		require.IsType(t, "", args["city"])
		require.Equal(t, "celsius", args["unit"], "an enum takes its first value")
		require.Equal(t, float64(2), args["days"])
	}

	t.Run("unary", func(t *testing.T) {
		resp, err := c.Chat.Completions.New(context.Background(), params)
		require.NoError(t, err)
		require.Equal(t, "tool_calls", resp.Choices[0].FinishReason)
		calls := resp.Choices[0].Message.ToolCalls
		require.Len(t, calls, 1)
		require.Equal(t, "get_weather", calls[0].Function.Name)
		require.NotEmpty(t, calls[0].ID)
		checkArgs(t, calls[0].Function.Arguments)

		again, err := c.Chat.Completions.New(context.Background(), params)
		require.NoError(t, err)
		require.Equal(t, calls[0].Function.Arguments, again.Choices[0].Message.ToolCalls[0].Function.Arguments, "deterministic")
		require.Equal(t, calls[0].ID, again.Choices[0].Message.ToolCalls[0].ID)

		next := params
		next.Messages = append(append([]openai.ChatCompletionMessageParamUnion{}, params.Messages...),
			resp.Choices[0].Message.ToParam(), openai.ToolMessage(`{"temp":21}`, calls[0].ID))
		final, err := c.Chat.Completions.New(context.Background(), next)
		require.NoError(t, err)
		require.Equal(t, "stop", final.Choices[0].FinishReason, "after the tool's result, a text answer")
		require.NotEmpty(t, final.Choices[0].Message.Content)
	})

	t.Run("stream", func(t *testing.T) {
		s := c.Chat.Completions.NewStreaming(context.Background(), params)
		acc := openai.ChatCompletionAccumulator{}
		pieces := 0
		for s.Next() {
			chunk := s.Current()
			acc.AddChunk(chunk)
			if len(chunk.Choices) > 0 && len(chunk.Choices[0].Delta.ToolCalls) > 0 {
				pieces++
			}
		}
		require.NoError(t, s.Err())
		require.Greater(t, pieces, 1, "arguments arrive in pieces")
		require.Equal(t, "tool_calls", acc.Choices[0].FinishReason)
		calls := acc.Choices[0].Message.ToolCalls
		require.Len(t, calls, 1)
		require.Equal(t, "get_weather", calls[0].Function.Name)
		checkArgs(t, calls[0].Function.Arguments)
	})

	t.Run("tool_choice none answers in text", func(t *testing.T) {
		p := params
		p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("none")}
		resp, err := c.Chat.Completions.New(context.Background(), p)
		require.NoError(t, err)
		require.Equal(t, "stop", resp.Choices[0].FinishReason)
		require.Empty(t, resp.Choices[0].Message.ToolCalls)
	})
}
