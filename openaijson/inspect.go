package openaijson

import "strconv"

// ChunkInfo is what a relay needs to know about a stream chunk without decoding it.
type ChunkInfo struct {
	// Error is set when the chunk's top level has an "error" member.
	Error bool
	// Finished is set when a choice carries a non-empty finish_reason.
	Finished bool
	// Usage is set when the chunk carries a usage object; UsageOnly when it also has
	// no choices (OpenAI's final usage chunk).
	Usage, UsageOnly bool
	// PromptTokens and CompletionTokens come from usage.
	PromptTokens, CompletionTokens int
	// Complete is set when the chunk has every member OpenAI always sends (id,
	// object, created, model, choices[].index), so that it can be relayed as is.
	Complete bool
}

// InspectChunk reads a chat.completion.chunk's bytes (checking their syntax) and
// reports what a relay needs, without allocating a message.
func InspectChunk(data []byte) (ChunkInfo, error) {
	var info ChunkInfo
	s := scanner{data: data}
	if s.peek() != '{' {
		return info, errSyntax
	}
	var id, object, created, model, choices bool
	indexes, nChoices := true, 0
	err := s.object(func(key []byte) error {
		switch string(key) {
		case "error":
			info.Error = s.peek() != 'n'
			return s.skip()
		case "id":
			id = s.peek() == '"'
		case "object":
			object = s.peek() == '"'
		case "created":
			created = s.peek() != 'n' && s.peek() != '"'
		case "model":
			model = s.peek() == '"'
		case "usage":
			if s.peek() == '{' {
				info.Usage = true
				return s.object(func(k []byte) error {
					if string(k) != "prompt_tokens" && string(k) != "completion_tokens" {
						return s.skip()
					}
					num, err := s.number()
					if err != nil {
						return err
					}
					n, _ := strconv.Atoi(string(num))
					if string(k) == "prompt_tokens" {
						info.PromptTokens = n
					} else {
						info.CompletionTokens = n
					}
					return nil
				})
			}
		case "choices":
			if s.peek() != '[' {
				return s.skip()
			}
			choices = true
			return s.array(func(int) error {
				nChoices++
				if s.peek() != '{' {
					return errSyntax
				}
				hasIndex := false
				err := s.object(func(k []byte) error {
					switch string(k) {
					case "index":
						if c := s.peek(); c != '-' && (c < '0' || c > '9') {
							return errSyntax // not a number: let the full decoder judge it
						}
						hasIndex = true
					case "finish_reason":
						if s.peek() == '"' {
							v, err := s.str()
							info.Finished = info.Finished || v != ""
							return err
						}
					}
					return s.skip()
				})
				indexes = indexes && hasIndex
				return err
			})
		}
		return s.skip()
	})
	if err == nil && !s.atEnd() {
		err = errSyntax
	}
	info.UsageOnly = info.Usage && nChoices == 0
	info.Complete = id && object && created && model && choices && indexes
	return info, err
}
