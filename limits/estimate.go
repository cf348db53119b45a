package limits

// BytesPerToken is the estimate's ratio: about four bytes of English text per
// token (OpenAI's rule of thumb).
const BytesPerToken = 4

// EstimateTokens is a call's admission estimate for tpm: its request's size in
// bytes over BytesPerToken (markup included, so the prompt is somewhat
// over-estimated) plus the completion tokens it asks for at most (max_tokens or
// max_completion_tokens; 0 if unset). It costs nothing to compute and is
// corrected by the real usage when the answer ends; a call that sets no maximum
// is under-estimated until then.
func EstimateTokens(requestBytes, maxCompletionTokens int) int {
	return (max(requestBytes, 0)+BytesPerToken-1)/BytesPerToken + max(maxCompletionTokens, 0)
}
