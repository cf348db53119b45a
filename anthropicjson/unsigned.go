package anthropicjson

import (
	"bytes"
	"encoding/json"
	"slices"
)

// FitForAnthropic returns a /v1/messages body Anthropic accepts when its history
// holds turns another model answered in a mixed chain, as Switchyard wrote them
// for the client (FromCompletion, EventWriter):
//   - thinking blocks with an empty signature (a chat target's reasoning) are
//     left out: Anthropic refuses a signature it cannot verify (400 "Invalid
//     `signature` in `thinking` block"), so a conversation a chat target answered
//     once would fail on every later turn on a Claude target;
//   - with thinking enabled during a tool loop (the last turn carries tool_result
//     blocks) whose last assistant turn does not begin with a thinking block (a
//     chat target made the tool call), thinking is left out of the request:
//     Anthropic requires that turn to begin with a signed thinking block when
//     thinking is on, and no such block exists.
//
// Any other body is returned as it is, byte for byte; a changed one keeps every
// byte but the arrays and the member it changes. A body that is not the object
// ReadHead accepted is returned as it is (the upstream judges it). Only a body
// with an empty signature or with thinking enabled is read past its top level.
func FitForAnthropic(body []byte) []byte {
	unsigned := hasEmptySignature(body)
	if !unsigned && !bytes.Contains(body, []byte(`"thinking"`)) {
		return body
	}
	ms, err := topMembers(body)
	if err != nil {
		return body
	}
	var messages, thinking *topMember
	for i := range ms {
		switch ms[i].key {
		case "messages":
			messages = &ms[i]
		case "thinking":
			thinking = &ms[i]
		}
	}
	enabled := thinking != nil && thinkingEnabled(body[thinking.start:thinking.end])
	if messages == nil || (!unsigned && !enabled) {
		return body
	}
	turns, err := arrayElements(body[messages.start:messages.end])
	if err != nil {
		return body
	}
	changed := false
	if unsigned {
		for i, turn := range turns {
			if hasEmptySignature(turn) {
				var dropped bool
				turns[i], dropped = withoutUnsigned(turn)
				changed = changed || dropped
			}
		}
	}
	var edits []edit
	if changed {
		edits = append(edits, edit{messages.start, messages.end, joinArray(turns)})
	}
	if enabled && toolLoopWithoutThinking(turns) {
		from, to := memberSpan(body, ms, *thinking)
		edits = append(edits, edit{from, to, nil})
	}
	if len(edits) == 0 {
		return body
	}
	slices.SortFunc(edits, func(a, b edit) int { return a.from - b.from })
	var b bytes.Buffer
	b.Grow(len(body))
	at := 0
	for _, e := range edits {
		b.Write(body[at:e.from])
		b.Write(e.with)
		at = e.to
	}
	b.Write(body[at:])
	return b.Bytes()
}

// turn is what FitForAnthropic reads of a turn.
type turn struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type blockHead struct {
	Type      string  `json:"type"`
	Signature *string `json:"signature"`
}

// toolLoopWithoutThinking reports whether the last turn is a user turn with
// tool_result blocks and the assistant turn before it does not begin with a
// thinking (or redacted_thinking) block. Only those two turns are read.
func toolLoopWithoutThinking(turns [][]byte) bool {
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
	if json.Unmarshal(turns[len(turns)-2], &prev) != nil || prev.Role != "assistant" {
		return false
	}
	if json.Unmarshal(prev.Content, &prevBlocks) != nil {
		return true // a string content: no thinking block
	}
	return len(prevBlocks) > 0 && prevBlocks[0].Type != BlockThinking && prevBlocks[0].Type != BlockRedactedThinking
}

// withoutUnsigned is a turn without its unsigned thinking blocks (the turn as it
// was when it has none), and whether it lost any.
func withoutUnsigned(t []byte) ([]byte, bool) {
	ms, err := topMembers(t)
	if err != nil {
		return t, false
	}
	i := slices.IndexFunc(ms, func(m topMember) bool { return m.key == "content" })
	if i < 0 || t[ms[i].start] != '[' {
		return t, false
	}
	content := ms[i]
	blocks, err := arrayElements(t[content.start:content.end])
	if err != nil {
		return t, false
	}
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
	out := append(append([]byte{}, t[:content.start]...), joinArray(keep)...)
	return append(out, t[content.end:]...), true
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

// arrayElements lists the elements of a JSON array, as their bytes.
func arrayElements(array []byte) ([][]byte, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(array, &raw); err != nil {
		return nil, err
	}
	out := make([][]byte, len(raw))
	for i, r := range raw {
		out[i] = r
	}
	return out, nil
}

func thinkingEnabled(v []byte) bool {
	var t struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(v, &t) == nil && t.Type == "enabled"
}

// memberSpan is where member m lies in body with what joins it to its
// neighbours: from its name to the comma after its value when another member
// follows, else from the comma after the member before it (the whole inside of
// the braces when it is the only one).
func memberSpan(body []byte, ms []topMember, m topMember) (from, to int) {
	from = bytes.IndexByte(body, '{') + 1
	idx := slices.Index(ms, m)
	if idx > 0 {
		prev := ms[idx-1].end
		from = prev + bytes.IndexByte(body[prev:], ',') + 1
	}
	if idx+1 < len(ms) {
		return from, m.end + bytes.IndexByte(body[m.end:], ',') + 1
	}
	if idx > 0 {
		from = ms[idx-1].end
	}
	return from, m.end
}
