package usage

// Tokens is a request's usage, normalised across upstream wire formats.
type Tokens struct {
	// Prompt counts every input token, cached ones included.
	Prompt int64
	// Completion counts every output token, reasoning ones included.
	Completion int64
	// Cached is the part of Prompt read from the provider's prompt cache.
	Cached int64
	// CacheWrite is the part of Prompt written to the cache (Anthropic's
	// cache_creation_input_tokens), billed at cache_write_input when priced.
	CacheWrite int64
	// Reasoning is the part of Completion spent on hidden reasoning.
	Reasoning int64
	// Estimated is set when the upstream reported no usage and the counts are
	// Switchyard's own estimate.
	Estimated bool
}

// FromOpenAI normalises an OpenAI-style usage object. OpenAI counts reasoning
// inside completion_tokens (total = prompt + completion); some compatible
// providers (xAI) count it beside them (total = prompt + completion + reasoning):
// then the reasoning tokens are added to Completion, since they are billed as
// output either way. cached_tokens is a part of prompt_tokens.
func FromOpenAI(prompt, completion, total, cached, reasoning int64) Tokens {
	t := Tokens{Prompt: prompt, Completion: completion, Cached: cached, Reasoning: reasoning}
	if reasoning > 0 && total > 0 && total >= prompt+completion+reasoning {
		t.Completion += reasoning
	}
	return t
}

// FromAnthropic normalises Anthropic's usage: input_tokens excludes the cache
// reads and writes, which are counted beside it.
func FromAnthropic(input, output, cacheRead, cacheWrite int64) Tokens {
	return Tokens{Prompt: input + cacheRead + cacheWrite, Completion: output, Cached: cacheRead, CacheWrite: cacheWrite}
}

// Total is every token the request used.
func (t Tokens) Total() int64 { return t.Prompt + t.Completion }
