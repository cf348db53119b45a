package anthropicjson

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPrepareNative(t *testing.T) {
	t.Parallel()
	const (
		user       = `{"role":"user","content":"x + 5 = 12"}`
		signed     = `{"role":"assistant","content":[{"type":"thinking","thinking":"12-5","signature":"EoQDCkYICxgC"},{"type":"text","text":"7"}]}`
		unsigned   = `{"role":"assistant","content":[{"type":"thinking","thinking":"12-5","signature":""},{"type":"text","text":"7"}]}`
		toolCall   = `{"role":"assistant","content":[{"type":"tool_use","id":"call_1","name":"calc","input":{"e":"12-5"}}]}`
		unsignedTC = `{"role":"assistant","content":[{"type":"thinking","thinking":"use calc","signature":""},{"type":"tool_use","id":"call_1","name":"calc","input":{}}]}`
		signedTC   = `{"role":"assistant","content":[{"type":"thinking","thinking":"use calc","signature":"EoQD"},{"type":"tool_use","id":"call_1","name":"calc","input":{}}]}`
		claudeTC   = `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_01","name":"calc","input":{}}]}`
		onlyUnsig  = `{"role":"assistant","content":[{"type":"thinking","thinking":"cut while thinking","signature":""}]}`
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
		{name: "a turn left with no content goes",
			in:   body(`"model":"m"`, msgs(user, onlyUnsig, user)),
			want: body(`"model":"m"`, msgs(user, user))},
		{name: "a final assistant turn may be left empty",
			in:   body(`"model":"m"`, msgs(user, onlyUnsig)),
			want: body(`"model":"m"`, msgs(user, `{"role":"assistant","content":[]}`))},
		{name: "Claude's own tool call whose client dropped its thinking: as it came (Anthropic's 400 says why)",
			in: body(`"model":"m"`, enabled, msgs(user, claudeTC, result))},
		{name: "thinking given twice: both go",
			in:   body(`"model":"m"`, enabled, `"thinking":{"type":"enabled","budget_tokens":2048}`, msgs(user, toolCall, result)),
			want: body(`"model":"m"`, msgs(user, toolCall, result))},
		{name: "thinking given twice at the end: both go, the body stays JSON",
			in:   body(`"model":"m"`, msgs(user, toolCall, result), enabled, `"thinking":{"type":"enabled"}`),
			want: body(`"model":"m"`, msgs(user, toolCall, result))},
		{name: "thinking given three times, spaced, at the end",
			in:   "{\"model\":\"m\"," + msgs(user, toolCall, result) + ` , "thinking" : {"type":"enabled"} , "thinking":{"type":"enabled"},"thinking":{"type":"enabled"} }`,
			want: "{\"model\":\"m\"," + msgs(user, toolCall, result) + " }"},
		{name: "a user turn left with no content goes, even last",
			in:   body(`"model":"m"`, msgs(user, `{"role":"user","content":[{"type":"thinking","thinking":"t","signature":""}]}`)),
			want: body(`"model":"m"`, msgs(user))},
		{name: "content given twice: the last is the one read",
			in:   body(`"model":"m"`, msgs(user, `{"role":"assistant","content":"x","content":[{"type":"thinking","thinking":"t","signature":""},{"type":"text","text":"7"}]}`, user)),
			want: body(`"model":"m"`, msgs(user, `{"role":"assistant","content":"x","content":[{"type":"text","text":"7"}]}`, user))},
		{name: "the model set, no model given",
			in:   body(`"max_tokens":5`, msgs(user)),
			want: body(`"model":"m","max_tokens":5`, msgs(user))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			want := tc.want
			if want == "" {
				want = tc.in
			}
			got, err := PrepareNative([]byte(strings.Replace(tc.in, `"model":"m"`, `"model":"smart"`, 1)), "m")
			require.NoError(t, err)
			require.Equal(t, want, string(got))
			if tc.want != "" {
				require.True(t, json.Valid(got), string(got))
			}
		})
	}
}

// FuzzPrepareNative: whatever object ReadHead accepts, PrepareNative does not
// panic, sets the model, leaves a body with neither an empty signature nor
// thinking as it came but for the model, and what it changes stays valid JSON.
func FuzzPrepareNative(f *testing.F) {
	for _, s := range []string{
		`{"model":"x","max_tokens":1,"thinking":{"type":"enabled"},"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"c"}]},{"role":"user","content":[{"type":"tool_result"}]}]}`,
		`{"model":"x","max_tokens":1,"messages":[{"role":"assistant","content":[{"type":"thinking","signature":""}]}],"thinking":{"type":"enabled"},"thinking":{"type":"enabled"}}`,
		`{"model":"x","max_tokens":1,"messages":[{"content":[{"type":"thinking","signature" :  ""},1,"x",null,[]]},{"role":"user"}]}`,
		`{"model":"x","max_tokens":1,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"c"}]},{"role":"user","content":[{"type":"tool_result"}]}],"thinking":{"type":"enabled"},"thinking":{"type":"enabled"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if _, err := ReadHead(body); err != nil {
			return
		}
		in := string(body)
		got, err := PrepareNative(body, "m")
		require.NoError(t, err)
		require.Equal(t, in, string(body), "the body it was given is not changed")
		require.True(t, json.Valid(got), "%s\n-> %s", in, got)
		var head struct{ Model string }
		require.NoError(t, json.Unmarshal(got, &head))
		require.Equal(t, "m", head.Model)
		if !hasEmptySignature(body) && !strings.Contains(in, `"thinking"`) {
			want, err := RewriteModel(body, "m")
			require.NoError(t, err)
			require.Equal(t, string(want), string(got))
		}
	})
}

// BenchmarkPrepareNative: a 512 KB history with signed thinking blocks and
// thinking on, against the rewrite of its model alone (what every native attempt
// paid before, twice: once in the server, once in the provider).
func BenchmarkPrepareNative(b *testing.B) {
	var turns []string
	for len(strings.Join(turns, ",")) < 512<<10 {
		turns = append(turns, `{"role":"user","content":"`+strings.Repeat("tell me more about it. ", 40)+`"}`,
			`{"role":"assistant","content":[{"type":"thinking","thinking":"`+strings.Repeat("hmm. ", 100)+`","signature":"EoQDCkYICxgC"},{"type":"text","text":"`+strings.Repeat("an answer. ", 60)+`"}]}`)
	}
	turns = append(turns, `{"role":"user","content":"and?"}`)
	body := []byte(`{"model":"smart","max_tokens":1024,"thinking":{"type":"enabled","budget_tokens":2048},"messages":[` + strings.Join(turns, ",") + `]}`)
	b.Run("prepare", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := PrepareNative(body, "claude"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read head", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := ReadHead(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("rewrite model", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := RewriteModel(body, "claude"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
