package anthropicjson

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReadHead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		want       Head
		param      string // "" with wantErr: the body as a whole
		wantErr    string
	}{
		{name: "ok", body: `{"model":"claude","max_tokens":10,"messages":[]}`, want: Head{Model: "claude", MaxTokens: 10}},
		{name: "stream", body: ` {"stream":true,"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}]} `, want: Head{Model: "m", Stream: true, MaxTokens: 1}},
		{name: "last duplicate wins", body: `{"model":"a","model":"b","max_tokens":1,"messages":[]}`, want: Head{Model: "b", MaxTokens: 1}},
		{name: "missing max_tokens", body: `{"model":"m","messages":[]}`, param: "max_tokens", wantErr: "Field required"},
		{name: "max_tokens zero", body: `{"model":"m","max_tokens":0,"messages":[]}`, param: "max_tokens", wantErr: "greater than or equal to 1"},
		{name: "max_tokens not an integer", body: `{"model":"m","max_tokens":"5","messages":[]}`, param: "max_tokens", wantErr: "valid integer"},
		{name: "max_tokens too big", body: `{"model":"m","max_tokens":99999999999,"messages":[]}`, param: "max_tokens", wantErr: "valid integer"},
		{name: "missing model", body: `{"max_tokens":1,"messages":[]}`, param: "model", wantErr: "Field required"},
		{name: "model not a string", body: `{"model":7,"max_tokens":1,"messages":[]}`, param: "model", wantErr: "valid string"},
		{name: "empty model", body: `{"model":"","max_tokens":1,"messages":[]}`, param: "model", wantErr: "at least 1 character"},
		{name: "missing messages", body: `{"model":"m","max_tokens":1}`, param: "messages", wantErr: "Field required"},
		{name: "messages not a list", body: `{"model":"m","max_tokens":1,"messages":{}}`, param: "messages", wantErr: "valid list"},
		{name: "stream not a boolean", body: `{"model":"m","max_tokens":1,"messages":[],"stream":"yes"}`, param: "stream", wantErr: "valid boolean"},
		{name: "not JSON", body: `{"model":`, wantErr: "not valid JSON"},
		{name: "empty", body: ``, wantErr: "not valid JSON"},
		{name: "not an object", body: `["model"]`, wantErr: "must be a JSON object"},
		{name: "trailing data", body: `{"model":"m","max_tokens":1,"messages":[]} {}`, wantErr: "data after the top-level object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, err := ReadHead([]byte(tc.body))
			if tc.wantErr == "" {
				require.NoError(t, err)
				require.Equal(t, tc.want, h)
				return
			}
			var se *SurfaceError
			require.ErrorAs(t, err, &se)
			require.Equal(t, tc.param, se.Param)
			require.Contains(t, se.Message, tc.wantErr)
			require.False(t, se.Unsupported)
		})
	}
}

func TestReadCountHeadNeedsNoMaxTokens(t *testing.T) {
	t.Parallel()
	h, err := ReadCountHead([]byte(`{"model":"m","messages":[]}`))
	require.NoError(t, err)
	require.Equal(t, "m", h.Model)
	_, err = ReadCountHead([]byte(`{"messages":[]}`))
	require.ErrorContains(t, err, "model: Field required")
}

func TestRewriteModel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, body, want string }{
		{name: "only the top-level model changes",
			body: "{ \"model\" : \"smart\",\n \"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\",\"cache_control\":{\"type\":\"ephemeral\"}}]}],\"metadata\":{\"model\":\"keep\"}, \"max_tokens\": 1.0e3 }",
			want: "{ \"model\" : \"claude-3\",\n \"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\",\"cache_control\":{\"type\":\"ephemeral\"}}]}],\"metadata\":{\"model\":\"keep\"}, \"max_tokens\": 1.0e3 }"},
		{name: "model last, number before it",
			body: `{"max_tokens":12,"model":null}`, want: `{"max_tokens":12,"model":"claude-3"}`},
		{name: "escaped name", body: `{"mod\u0065l":"x","a":"\"model\":\"y\""}`, want: `{"mod\u0065l":"claude-3","a":"\"model\":\"y\""}`},
		{name: "every duplicate", body: `{"model":"a","model":"b"}`, want: `{"model":"claude-3","model":"claude-3"}`},
		{name: "absent", body: ` {"max_tokens":1}`, want: ` {"model":"claude-3","max_tokens":1}`},
		{name: "absent, empty object", body: `{}`, want: `{"model":"claude-3"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := RewriteModel([]byte(tc.body), "claude-3")
			require.NoError(t, err)
			require.Equal(t, tc.want, string(got))
		})
	}
	_, err := RewriteModel([]byte(`{"model":`), "x")
	require.Error(t, err)
}

func TestErrorJSON(t *testing.T) {
	t.Parallel()
	require.JSONEq(t, `{"type":"error","error":{"type":"overloaded_error","message":"busy"},"request_id":"req_1"}`,
		string(ErrorJSON("overloaded_error", "busy", "req_1")))
	require.JSONEq(t, `{"type":"error","error":{"type":"api_error","message":"x"}}`, string(ErrorJSON("api_error", "x", "")))
}

// FuzzRewriteModel: whatever the body, RewriteModel either refuses it or returns
// valid JSON that decodes to the same object but for its model.
func FuzzRewriteModel(f *testing.F) {
	for _, s := range []string{`{"model":"a","max_tokens":1}`, `{}`, ` {"x":[1,{"model":2}],"model":null} `, `{"mod\u0065l":"x"}`,
		`{"a":"\"}"}`, `[]`, `{"model":"a"} x`, `{"a":1e400}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		out, err := RewriteModel(body, "m\"<")
		if err != nil {
			return
		}
		var before, after map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(body, &before), "accepted a body that is not a JSON object: %q", body)
		require.NoError(t, json.Unmarshal(out, &after), "wrote invalid JSON: %q", out)
		require.JSONEq(t, `"m\"<"`, string(after["model"]))
		delete(before, "model")
		delete(after, "model")
		require.Equal(t, len(before), len(after))
		for k, v := range before {
			require.Equal(t, string(v), string(after[k]), k)
		}
	})
}
