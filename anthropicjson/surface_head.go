package anthropicjson

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/switchyard/switchyard/openaijson"
)

// topMember is one top-level member of a JSON object: its name and where its value
// lies in the object's bytes.
type topMember struct {
	key        string
	start, end int
}

// topMembers lists the top-level members of body, which must be exactly one JSON
// object (whitespace aside). Names are compared unescaped, as JSON means them.
// The whole body is checked as JSON in the one pass (openaijson.Members, nesting
// at most openaijson.MaxDepth, as on the chat surface).
func topMembers(body []byte) ([]topMember, error) {
	var out []topMember
	err := openaijson.Members(body, func(name string, start, end int) error {
		out = append(out, topMember{key: name, start: start, end: end})
		return nil
	})
	if err == nil {
		return out, nil
	}
	if errors.Is(err, openaijson.ErrNotObject) {
		return nil, badField("", "the request body must be a JSON object")
	}
	return nil, badField("", "the request body is not valid JSON: "+strings.TrimPrefix(err.Error(), "invalid JSON: "))
}

// ReadHead checks what every /v1/messages request needs before it is routed, as
// Anthropic does: a JSON object with a model (a non-empty string), max_tokens (an
// integer of at least 1), messages (an array) and, if present, a boolean stream.
// The error is a *SurfaceError naming the member.
func ReadHead(body []byte) (Head, error) {
	ms, err := topMembers(body)
	if err != nil {
		return Head{}, err
	}
	var model, maxTokens, messages, stream []byte
	for _, m := range ms { // the last of duplicate members wins, as in encoding/json
		v := body[m.start:m.end]
		switch m.key {
		case "model":
			model = v
		case "max_tokens":
			maxTokens = v
		case "messages":
			messages = v
		case "stream":
			stream = v
		}
	}
	var h Head
	if err := readModel(model, &h); err != nil {
		return h, err
	}
	if maxTokens == nil {
		return h, badField("max_tokens", "Field required")
	}
	if n, err := strconv.ParseInt(string(maxTokens), 10, 32); err != nil {
		return h, badField("max_tokens", "Input should be a valid integer of at most "+strconv.Itoa(1<<31-1))
	} else if n < 1 {
		return h, badField("max_tokens", "Input should be greater than or equal to 1")
	} else {
		h.MaxTokens = int(n)
	}
	if err := readMessages(messages); err != nil {
		return h, err
	}
	if stream != nil && json.Unmarshal(stream, &h.Stream) != nil {
		return h, badField("stream", "Input should be a valid boolean")
	}
	return h, nil
}

func readModel(model []byte, h *Head) error {
	switch {
	case model == nil:
		return badField("model", "Field required")
	case model[0] != '"' || json.Unmarshal(model, &h.Model) != nil:
		return badField("model", "Input should be a valid string")
	case h.Model == "":
		return badField("model", "String should have at least 1 character")
	}
	return nil
}

func readMessages(messages []byte) error {
	switch {
	case messages == nil:
		return badField("messages", "Field required")
	case messages[0] != '[':
		return badField("messages", "Input should be a valid list")
	}
	return nil
}

// RewriteModel returns body with the value of its top-level "model" member (every
// one, if the object repeats it) replaced by model, and every other byte as it
// was; a body without one gets it as its first member. body must be a JSON
// object (see ReadHead).
func RewriteModel(body []byte, model string) ([]byte, error) {
	ms, err := topMembers(body)
	if err != nil {
		return nil, err
	}
	return splice(body, modelEdits(body, ms, model)), nil
}

// ReadCountHead checks a /v1/messages/count_tokens request as Anthropic does: a
// JSON object with a model (a non-empty string) and messages (an array).
func ReadCountHead(body []byte) (Head, error) {
	ms, err := topMembers(body)
	if err != nil {
		return Head{}, err
	}
	var model, messages []byte
	for _, m := range ms {
		switch m.key {
		case "model":
			model = body[m.start:m.end]
		case "messages":
			messages = body[m.start:m.end]
		}
	}
	var h Head
	if err := readModel(model, &h); err != nil {
		return h, err
	}
	return h, readMessages(messages)
}
