package openai

import (
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/openaijson"
)

// readable is a non-stream answer that can go to a caller of OpenAI's wire as
// the upstream sent it (providers.RawAnswers): one UnmarshalCompletion accepts,
// with choices, needing nothing filled in (normalize would change nothing).
// What it returns holds only what Switchyard reads of an answer: its id and
// model, as many choices, and its usage (cached and reasoning tokens in the
// details, as DetailTokens reads them). nil: the answer is to be decoded.
func readable(body []byte) *pb.ChatCompletion {
	info, err := openaijson.InspectCompletion(body)
	if err != nil || !info.Complete || info.Choices == 0 {
		return nil
	}
	out := &pb.ChatCompletion{Id: info.ID, Model: info.Model, Choices: make([]*pb.Choice, info.Choices),
		Usage: &pb.Usage{PromptTokens: int32(info.PromptTokens), CompletionTokens: int32(info.CompletionTokens),
			TotalTokens: int32(info.TotalTokens)}}
	for i := range out.Choices {
		out.Choices[i] = &pb.Choice{}
	}
	out.Usage.PromptTokensDetails = tokenDetails("cached_tokens", info.CachedTokens)
	out.Usage.CompletionTokensDetails = tokenDetails("reasoning_tokens", info.ReasoningTokens)
	return out
}

// tokenDetails is a usage details object holding one count (nil for 0).
func tokenDetails(name string, n int) *structpb.Struct {
	if n == 0 {
		return nil
	}
	return &structpb.Struct{Fields: map[string]*structpb.Value{name: structpb.NewNumberValue(float64(n))}}
}
