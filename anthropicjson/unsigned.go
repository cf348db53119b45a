package anthropicjson

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// PrepareNative is a /v1/messages body as an Anthropic target gets it: the
// client's, with its top-level model set to model (every "model" member, or one
// added first) and, when its history holds turns another model answered in a
// mixed chain as Switchyard wrote them for the client (FromCompletion,
// EventWriter), what Anthropic would refuse of them left out:
//   - thinking blocks with an empty signature (a chat target's reasoning):
//     Anthropic refuses a signature it cannot verify (400 "Invalid `signature` in
//     `thinking` block"), so a conversation a chat target answered once would fail
//     on every later turn on a Claude target. A turn left with no content is left
//     out too (Anthropic refuses empty content but in a final assistant turn);
//   - with thinking enabled during a tool loop (the last turn carries tool_result
//     blocks) whose last assistant turn is a chat target's tool call (an id not in
//     Anthropic's toolu_ form) and does not begin with a thinking block, the
//     thinking member: Anthropic requires that turn to begin with a signed thinking
//     block when thinking is on, and none exists. A turn Claude made, whose client
//     dropped its thinking, still gets Anthropic's own 400.
//
// Every other byte is kept. The body is parsed once at its top level; the turns
// are read further only when a signature is empty or thinking is enabled, and
// then only the last two and those with an empty signature. body must be a JSON
// object (ReadHead checked it); one that is not is an error.
func PrepareNative(body []byte, model string) ([]byte, error) {
	ms, err := topMembers(body)
	if err != nil {
		return nil, err
	}
	return splice(body, append(modelEdits(body, ms, model), fitEdits(body, ms)...)), nil
}

// splice applies edits to body; where two overlap (two members cut side by
// side share the comma between them), the later one starts where the earlier
// ended.
func splice(body []byte, edits []edit) []byte {
	slices.SortStableFunc(edits, func(a, b edit) int { return a.from - b.from })
	n := len(body)
	for _, e := range edits {
		n += len(e.with)
	}
	out := make([]byte, 0, n)
	at := 0
	for _, e := range edits {
		from := max(e.from, at)
		if e.to < from {
			continue
		}
		out = append(append(out, body[at:from]...), e.with...)
		at = e.to
	}
	return append(out, body[at:]...)
}

// fitEdits are PrepareNative's edits of another model's turns (none for most
// bodies).
func fitEdits(body []byte, ms []topMember) []edit {
	unsigned := hasEmptySignature(body)
	var messages *topMember
	var thinking []topMember // every one: the last wins, and all must go
	for i := range ms {
		switch ms[i].key {
		case "messages":
			messages = &ms[i]
		case "thinking":
			thinking = append(thinking, ms[i])
		}
	}
	enabled := len(thinking) > 0 && thinkingEnabled(body[thinking[len(thinking)-1].start:thinking[len(thinking)-1].end])
	if messages == nil || body[messages.start] != '[' || (!unsigned && !enabled) {
		return nil
	}
	turns := elements(body[messages.start:messages.end])
	var edits []edit
	if unsigned {
		kept, changed := make([][]byte, 0, len(turns)), false
		for i, t := range turns {
			if hasEmptySignature(t) {
				var dropped bool
				t, dropped = withoutUnsigned(t, i == len(turns)-1)
				changed = changed || dropped
				if t == nil {
					continue // no content left: the turn goes
				}
			}
			kept = append(kept, t)
		}
		if changed {
			edits = append(edits, edit{messages.start, messages.end, joinArray(kept)})
			turns = kept
		}
	}
	if enabled && toolLoopOfAnotherModel(turns) {
		edits = append(edits, withoutMembers(body, ms, func(m topMember) bool { return m.key == "thinking" })...)
	}
	return edits
}

// modelEdits set every top-level "model" member's value to model, or add one first.
func modelEdits(body []byte, ms []topMember, model string) []edit {
	q, _ := json.Marshal(model)
	var edits []edit
	for _, m := range ms {
		if m.key == "model" {
			edits = append(edits, edit{m.start, m.end, q})
		}
	}
	if len(edits) > 0 {
		return edits
	}
	open := bytes.IndexByte(body, '{') + 1 // members found the object: it has a brace
	with := append([]byte(`"model":`), q...)
	if len(ms) > 0 {
		with = append(with, ',')
	}
	return []edit{{open, open, with}}
}

// turn is what PrepareNative reads of a turn.
type turn struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type blockHead struct {
	Type      string  `json:"type"`
	ID        string  `json:"id"`
	Signature *string `json:"signature"`
}

// toolLoopOfAnotherModel reports whether the last turn is a user turn with
// tool_result blocks and the assistant turn before it is a chat target's tool
// call (a tool_use id not in Anthropic's toolu_ form) that does not begin with a
// thinking (or redacted_thinking) block. Only those two turns are read.
func toolLoopOfAnotherModel(turns [][]byte) bool {
	if len(turns) < 2 {
		return false
	}
	var last, prev turn
	var lastBlocks, prevBlocks []blockHead
	if json.Unmarshal(turns[len(turns)-1], &last) != nil || last.Role != "user" || json.Unmarshal(last.Content, &lastBlocks) != nil {
		return false
	}
	if !slices.ContainsFunc(lastBlocks, func(b blockHead) bool { return b.Type == BlockToolResult }) {
		return false
	}
	if json.Unmarshal(turns[len(turns)-2], &prev) != nil || prev.Role != "assistant" || json.Unmarshal(prev.Content, &prevBlocks) != nil {
		return false
	}
	foreign := slices.ContainsFunc(prevBlocks, func(b blockHead) bool {
		return b.Type == BlockToolUse && !strings.HasPrefix(b.ID, "toolu_")
	})
	return foreign && len(prevBlocks) > 0 && prevBlocks[0].Type != BlockThinking && prevBlocks[0].Type != BlockRedactedThinking
}

// withoutUnsigned is a turn without its unsigned thinking blocks (the turn as it
// was when it has none), and whether it lost any; nil when no content is left,
// unless it is the final turn and an assistant's (which Anthropic lets be empty).
func withoutUnsigned(t []byte, final bool) ([]byte, bool) {
	ms, err := topMembers(t)
	if err != nil {
		return t, false
	}
	i := -1
	for j, m := range ms { // the last one wins, as Anthropic reads JSON
		if m.key == "content" {
			i = j
		}
	}
	if i < 0 || t[ms[i].start] != '[' {
		return t, false
	}
	content := ms[i]
	blocks := elements(t[content.start:content.end])
	keep := blocks[:0:0]
	for _, blk := range blocks {
		var b blockHead
		if json.Unmarshal(blk, &b) == nil && b.Type == BlockThinking && b.Signature != nil && *b.Signature == "" {
			continue
		}
		keep = append(keep, blk)
	}
	if len(keep) == len(blocks) {
		return t, false
	}
	if len(keep) == 0 && !(final && role(t, ms) == "assistant") {
		return nil, true
	}
	out := append(append([]byte{}, t[:content.start]...), joinArray(keep)...)
	return append(out, t[content.end:]...), true
}

// role is a turn's role ("" when it has none that is a string).
func role(t []byte, ms []topMember) string {
	var r string
	for _, m := range ms {
		if m.key == "role" {
			_ = json.Unmarshal(t[m.start:m.end], &r)
		}
	}
	return r
}

// edit replaces body[from:to] with with.
type edit struct {
	from, to int
	with     []byte
}

func joinArray(elems [][]byte) []byte {
	return append(append([]byte{'['}, bytes.Join(elems, []byte(","))...), ']')
}

// hasEmptySignature reports whether body has a "signature" member whose value is
// "" (spaces allowed around the colon): the cheap test that lets every other
// body through untouched.
func hasEmptySignature(body []byte) bool {
	key := []byte(`"signature"`)
	for i := bytes.Index(body, key); i >= 0; {
		rest := bytes.TrimLeft(body[i+len(key):], " \t\r\n")
		if len(rest) > 0 && rest[0] == ':' && bytes.HasPrefix(bytes.TrimLeft(rest[1:], " \t\r\n"), []byte(`""`)) {
			return true
		}
		next := bytes.Index(body[i+len(key):], key)
		if next < 0 {
			return false
		}
		i += len(key) + next
	}
	return false
}

// elements lists the elements of a JSON array already checked (ReadHead decoded
// the body), as their bytes, without decoding them: one pass over the bytes.
func elements(array []byte) [][]byte {
	var out [][]byte
	i := 1 // past '['
	for {
		i = skipSpace(array, i)
		if i >= len(array) || array[i] == ']' {
			return out
		}
		end := skipValue(array, i)
		out = append(out, array[i:end])
		i = skipSpace(array, end)
		if i < len(array) && array[i] == ',' {
			i++
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue is where the value at b[i] ends: strings with their escapes, objects
// and arrays to their closing bracket, anything else to the next delimiter.
func skipValue(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i // the end of the array or object a scalar is in
			}
			depth--
			if depth == 0 {
				return i + 1
			}
		case ',':
			if depth == 0 {
				return i
			}
		case ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}

func thinkingEnabled(v []byte) bool {
	var t struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(v, &t) == nil && t.Type == "enabled"
}

// withoutMembers are the edits that take out the members drop names, with the
// commas that join them to the rest: a run of them goes from the end of the
// member kept before it to the end of its last value; a run that begins the
// object goes from the brace to the name after it (the whole inside of the
// braces when every member goes). Runs never share a comma, so their edits do
// not overlap.
func withoutMembers(body []byte, ms []topMember, drop func(topMember) bool) []edit {
	open := bytes.IndexByte(body, '{') + 1
	var edits []edit
	kept := -1 // the end of the last kept member's value (-1: none yet)
	for i := 0; i < len(ms); {
		if !drop(ms[i]) {
			kept = ms[i].end
			i++
			continue
		}
		j := i
		for j < len(ms) && drop(ms[j]) {
			j++
		}
		last := ms[j-1].end
		switch {
		case kept >= 0:
			edits = append(edits, edit{kept, last, nil})
		case j < len(ms):
			edits = append(edits, edit{open, last + bytes.IndexByte(body[last:], ',') + 1, nil})
		default:
			edits = append(edits, edit{open, last, nil})
		}
		i = j
	}
	return edits
}
