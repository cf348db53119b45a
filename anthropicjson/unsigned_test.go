package anthropicjson

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFitForAnthropic(t *testing.T) {
	t.Parallel()
	const (
		user       = `{"role":"user","content":"x + 5 = 12"}`
		signed     = `{"role":"assistant","content":[{"type":"thinking","thinking":"12-5","signature":"EoQDCkYICxgC"},{"type":"text","text":"7"}]}`
		unsigned   = `{"role":"assistant","content":[{"type":"thinking","thinking":"12-5","signature":""},{"type":"text","text":"7"}]}`
		toolCall   = `{"role":"assistant","content":[{"type":"tool_use","id":"call_1","name":"calc","input":{"e":"12-5"}}]}`
		unsignedTC = `{"role":"assistant","content":[{"type":"thinking","thinking":"use calc","signature":""},{"type":"tool_use","id":"call_1","name":"calc","input":{}}]}`
		signedTC   = `{"role":"assistant","content":[{"type":"thinking","thinking":"use calc","signature":"EoQD"},{"type":"tool_use","id":"call_1","name":"calc","input":{}}]}`
		result     = `{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":"7"}]}`
		enabled    = `"thinking":{"type":"enabled","budget_tokens":1024}`
	)
	body := func(members ...string) string { return "{" + strings.Join(members, ",") + "}" }
	msgs := func(turns ...string) string { return `"messages":[` + strings.Join(turns, ",") + `]` }
	for _, tc := range []struct {
		name, in, want string
	}{
		{name: "no thinking: as it came",
			in: body(`"model":"m"`, `"max_tokens":5`, msgs(user))},
		{name: "signed blocks and thinking on: as it came, spacing and all",
			in: "{\"model\": \"m\",  " + enabled + ",\n" + msgs(user, signed, user) + "}"},
		{name: "a signed tool call in the loop: as it came",
			in: body(`"model":"m"`, enabled, msgs(user, signedTC, result))},
		{name: "thinking disabled, no empty signature: as it came",
			in: body(`"model":"m"`, `"thinking":{"type":"disabled"}`, msgs(user, toolCall, result))},
		{name: "not JSON: as it came", in: `{"model":"m","messages":[`},
		{name: "an unsigned block is left out, every other byte kept",
			in:   "{\"model\": \"m\",\n  " + msgs(user, unsigned, user) + ", \"future\": [1, 2.50]}",
			want: "{\"model\": \"m\",\n  " + msgs(user, `{"role":"assistant","content":[{"type":"text","text":"7"}]}`, user) + ", \"future\": [1, 2.50]}"},
		{name: "an unsigned block written with spaces",
			in:   body(`"model":"m"`, msgs(user, `{"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": ""}, {"type": "text", "text": "7"}]}`, user)),
			want: body(`"model":"m"`, msgs(user, `{"role": "assistant", "content": [{"type": "text", "text": "7"}]}`, user))},
		{name: "another model's tool call in the loop, thinking first: thinking left out",
			in:   body(enabled, `"model":"m"`, msgs(user, toolCall, result)),
			want: body(`"model":"m"`, msgs(user, toolCall, result))},
		{name: "thinking in the middle",
			in:   body(`"model":"m"`, enabled, msgs(user, toolCall, result)),
			want: body(`"model":"m"`, msgs(user, toolCall, result))},
		{name: "thinking last",
			in:   body(`"model":"m"`, msgs(user, toolCall, result), enabled),
			want: body(`"model":"m"`, msgs(user, toolCall, result))},
		{name: "an unsigned tool call in the loop: the block and thinking left out",
			in:   body(`"model":"m"`, `"max_tokens":5`, enabled, msgs(user, unsignedTC, result)),
			want: body(`"model":"m"`, `"max_tokens":5`, msgs(user, `{"role":"assistant","content":[{"type":"tool_use","id":"call_1","name":"calc","input":{}}]}`, result))},
		{name: "an unsigned block in an earlier turn, a signed loop now: only the block",
			in:   body(`"model":"m"`, enabled, msgs(user, unsigned, user, signedTC, result)),
			want: body(`"model":"m"`, enabled, msgs(user, `{"role":"assistant","content":[{"type":"text","text":"7"}]}`, user, signedTC, result))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			want := tc.want
			if want == "" {
				want = tc.in
			}
			got := FitForAnthropic([]byte(tc.in))
			require.Equal(t, want, string(got))
			if tc.want != "" {
				require.True(t, json.Valid(got), string(got))
			}
		})
	}
}

// FuzzFitForAnthropic: whatever the body, FitForAnthropic does not panic, leaves
// a body with neither an empty signature nor thinking as it came, and what it
// changes stays valid JSON.
func FuzzFitForAnthropic(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","thinking":{"type":"enabled"},"messages":[{"role":"assistant","content":[{"type":"tool_use"}]},{"role":"user","content":[{"type":"tool_result"}]}]}`,
		`{"messages":[{"role":"assistant","content":[{"type":"thinking","signature":""}]}],"thinking":{"type":"enabled"}}`,
		`{"messages":[{"content":[{"type":"thinking","signature" :  ""},1,"x",null]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		in := string(body)
		got := FitForAnthropic(body)
		require.Equal(t, in, string(body), "the body it was given is not changed")
		if string(got) == in {
			return
		}
		require.True(t, hasEmptySignature(body) || strings.Contains(in, `"thinking"`))
		require.True(t, json.Valid(got), "%s\n-> %s", in, got)
	})
}
