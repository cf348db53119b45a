package usage

// Tokens is a request's usage, normalised across upstream wire formats.
// Its JSON is the attempts list's compact stored form.
type Tokens struct {
	// Prompt counts every input token, cached ones included.
	Prompt int64 `json:"p,omitempty"`
	// Completion counts every output token, reasoning ones included.
	Completion int64 `json:"o,omitempty"`
	// Cached is the part of Prompt read from the provider's prompt cache.
	Cached int64 `json:"cr,omitempty"`
	// CacheWrite is the part of Prompt written to the cache (Anthropic's
	// cache_creation_input_tokens), billed at cache_write_input when priced.
	CacheWrite int64 `json:"cw,omitempty"`
	// Reasoning is the part of Completion spent on hidden reasoning.
	Reasoning int64 `json:"r,omitempty"`
	// Estimated is set when the upstream reported no usage and the counts are
	// Switchyard's own estimate.
	Estimated bool `json:"e,omitempty"`
}

// Plus is t and u together (estimated if either is).
func (t Tokens) Plus(u Tokens) Tokens {
	return Tokens{Prompt: t.Prompt + u.Prompt, Completion: t.Completion + u.Completion, Cached: t.Cached + u.Cached,
		CacheWrite: t.CacheWrite + u.CacheWrite, Reasoning: t.Reasoning + u.Reasoning, Estimated: t.Estimated || u.Estimated}
}

// Minus is what t has beyond u, never below zero.
func (t Tokens) Minus(u Tokens) Tokens {
	return Tokens{Prompt: max(t.Prompt-u.Prompt, 0), Completion: max(t.Completion-u.Completion, 0),
		Cached: max(t.Cached-u.Cached, 0), CacheWrite: max(t.CacheWrite-u.CacheWrite, 0),
		Reasoning: max(t.Reasoning-u.Reasoning, 0), Estimated: t.Estimated}
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
