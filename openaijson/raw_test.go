package openaijson_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/openaijson"
)

// sameAsDecoded holds UnmarshalChat to Unmarshal: the same verdict and error,
// the same request once its kept conversation is decoded, and the same JSON
// upstream (compared as encoding/json reads it). It reports whether the
// conversation was kept as bytes.
func sameAsDecoded(t *testing.T, body []byte) (kept bool) {
	t.Helper()
	var raw, dec pb.ChatCompletionRequest
	rawErr, decErr := openaijson.UnmarshalChat(body, &raw), openaijson.Unmarshal(body, &dec)
	if (rawErr == nil) != (decErr == nil) {
		t.Fatalf("verdicts differ on %q: kept %v, decoded %v", body, rawErr, decErr)
	}
	if rawErr != nil {
		require.Equal(t, decErr.Error(), rawErr.Error(), "the same error, param and all")
		return false
	}
	kept = len(raw.MessagesJson) > 0
	if kept { // what goes upstream as it is must be what decoding gives, byte-level faults included
		require.True(t, utf8.Valid(raw.MessagesJson), "kept bytes are valid UTF-8: %q", raw.MessagesJson)
	}
	full, err := openaijson.Decoded(&raw)
	require.NoError(t, err)
	if !proto.Equal(full, &dec) {
		t.Fatalf("decoded forms differ on %q:\n kept    %v\n decoded %v", body, full, &dec)
	}
	var a, b any
	require.NoError(t, json.Unmarshal(openaijson.Marshal(&raw), &a))
	require.NoError(t, json.Unmarshal(openaijson.Marshal(&dec), &b))
	require.Equal(t, b, a, "the upstream reads the same JSON")
	return kept
}

func TestUnmarshalChatKeepsTheConversationAsBytes(t *testing.T) {
	cases := []struct {
		name string
		body string
		kept bool
	}{
		{"plain", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, true},
		{"escapes of every kind", `{"model":"m","messages":[{"role":"user","content":"a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00"}]}`, true},
		{"parts, tool calls, unknown members", `{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function",` +
			`"function":{"name":"f","arguments":"{}"}}],"reasoning_content":"hm","x":[1,{"y":null}]},` +
			`{"role":"user","content":[{"type":"text","text":"t"},{"type":"image_url","image_url":{"url":"data:x"}}]}]}`, true},
		{"whitespace kept as sent", "{\"messages\" : [ {\"role\":\"user\" , \"content\":\"x\"} ] , \"model\":\"m\"}", true},
		{"the last messages counts", `{"messages":[{"role":"user","content":"a"}],"messages":[{"role":"user","content":"b"}]}`, true},
		{"a decoded one after a kept one", `{"messages":[{"role":"user","content":"a"}],"messages":[]}`, false},
		{"a kept one after a decoded one", `{"messages":[],"messages":[{"role":"user","content":"b"}]}`, true},
		{"empty: the handler's own error", `{"messages":[]}`, false},
		{"a message without a role", `{"messages":[{"content":"x"}]}`, false},
		{"an empty role", `{"messages":[{"role":"","content":"x"}]}`, false},
		{"a lone surrogate is mended, so decoded", `{"messages":[{"role":"user","content":"\ud83d!"}]}`, false},
		{"invalid UTF-8 is mended, so decoded", "{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}", false},
		{"invalid UTF-8 in a key is mended, so decoded", "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\",\"k\xff\":1}]}]}", false},
		{"a lone surrogate in a key", `{"messages":[{"role":"user","content":"x","x\ud800":2}]}`, false},
		{"a repeated member of a message", `{"messages":[{"role":"user","content":"a","content":"b"}]}`, false},
		{"a repeated member of a content part", `{"messages":[{"role":"user","content":[{"type":"text","text":"a","text":"b"}]}]}`, false},
		{"an escaped key that decodes to plain ASCII", `{"messages":[{"ro\u006ce":"user","content":"x"}]}`, true},
		{"a known member repeated, once escaped", `{"messages":[{"role":"user","ro\u006ce":"tool","content":"x"}]}`, false},
		{"an unknown member repeated", `{"messages":[{"role":"user","content":"x","y":1,"y":2}]}`, false},
		{"an unknown member and a known one", `{"messages":[{"role":"user","y":1,"content":"x","name":"n","z":2}]}`, true},
		{"invalid UTF-8 in an unknown member", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\",\"y\":[\"\xc3\"]}]}", false},
		{"UTF-8 of every length kept", "{\"messages\":[{\"role\":\"user\",\"content\":\"caf\xc3\xa9 \xe6\xbc\xa2\xe5\xad\x97\xe2\x9c\x93 \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf\xed\x9f\xbf\xee\x80\x80\"}]}", true},
		{"a run of CJK text kept", "{\"messages\":[{\"role\":\"user\",\"content\":\"" + strings.Repeat("\xe6\xbc\xa2", 40) + "\"}]}", true},
		{"an overlong two-byte sequence", "{\"messages\":[{\"role\":\"user\",\"content\":\"a\xc0\x80\"}]}", false},
		{"an overlong three-byte sequence", "{\"messages\":[{\"role\":\"user\",\"content\":\"a\xe0\x80\x80b\"}]}", false},
		{"a surrogate encoded as UTF-8", "{\"messages\":[{\"role\":\"user\",\"content\":\"a\xed\xa0\x80b\"}]}", false},
		{"above U+10FFFF", "{\"messages\":[{\"role\":\"user\",\"content\":\"\xf4\x90\x80\x80\"}]}", false},
		{"a sequence cut by the closing quote", "{\"messages\":[{\"role\":\"user\",\"content\":\"ab\xe6\xbc\"}]}", false},
		{"a lone continuation byte", "{\"messages\":[{\"role\":\"user\",\"content\":\"\x80abcdefghij\"}]}", false},
		{"wrong type: decoded for its error", `{"messages":[{"role":5,"content":"x"}]}`, false},
		{"null message", `{"messages":[null]}`, false},
		{"control character", "{\"messages\":[{\"role\":\"user\",\"content\":\"a\x01\"}]}", false},
		{"number out of range", `{"messages":[{"role":"user","content":"x","n":1e400}]}`, false},
		{"too deep", `{"messages":[{"role":"user","content":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}]}`, false},
		{"no member called messages_json", `{"messages":[{"role":"user","content":"x"}],"messages_json":"W10="}`, true},
		{"truncated", `{"messages":[{"role":"user","content":"x"}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.kept, sameAsDecoded(t, []byte(tc.body)))
		})
	}
}

// The values budget holds for a kept conversation as for a decoded one.
func TestUnmarshalChatKeepsTheValuesBudget(t *testing.T) {
	many := `{"messages":[{"role":"user","content":[` + strings.Repeat("0,", 2*openaijson.ValuesFloor) + `0]}]}`
	var req pb.ChatCompletionRequest
	err := openaijson.UnmarshalChat([]byte(many), &req)
	require.ErrorIs(t, err, openaijson.ErrTooManyValues)
	sameAsDecoded(t, []byte(many))
}

// A conversation kept as bytes reaches the upstream exactly as it arrived.
func TestKeptConversationIsWrittenAsItArrived(t *testing.T) {
	msgs := "[ {\"role\":\"user\",\"content\":\"caf\\u00e9 \\\"q\\\"\"} ]"
	body := `{"model":"m","messages":` + msgs + `,"temperature":0.5}`
	var req pb.ChatCompletionRequest
	require.NoError(t, openaijson.UnmarshalChat([]byte(body), &req))
	require.Equal(t, msgs, string(req.MessagesJson))
	require.Empty(t, req.Messages)
	out := openaijson.Marshal(&req)
	require.True(t, bytes.Contains(out, []byte(`"messages":`+msgs)), "got %s", out)
}

func FuzzUnmarshalChat(f *testing.F) {
	seeds(f)
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"a\"\n\u00e9"}]}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":"\ud83d\u0041"}]}`))
	f.Add([]byte(`{"messages":[{"role":"assistant","content":"x","tool_calls":[],"name":null}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		sameAsDecoded(t, body)
	})
}

// A member the decoder leaves unset (null, an empty list or map) is one the
// encoder does not write: a message holding one is decoded, not kept, so the
// upstream never reads what the decoded form would not send.
func TestKeptBytesAreWhatDecodingSends(t *testing.T) {
	cases := map[string]string{
		"tool_calls null":            `{"role":"user","content":"x","tool_calls":null}`,
		"tool_calls empty":           `{"role":"assistant","content":"x","tool_calls":[]}`,
		"name null":                  `{"role":"user","content":"x","name":null}`,
		"nested nulls":               `{"role":"user","content":"x","tool_calls":[{"id":null,"function":null}]}`,
		"a null argument":            `{"role":"user","content":"x","tool_calls":[{"function":{"name":"f","arguments":null}}]}`,
		"a null in a list":           `{"role":"user","content":"x","tool_calls":[null]}`,
		"an empty tool call":         `{"role":"user","content":"x","tool_calls":[{}]}`,
		"content null":               `{"role":"user","content":null}`,
		"content parts with a null":  `{"role":"user","content":[null,{"type":"text"}]}`,
		"a whole tool call":          `{"role":"user","content":"x","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]}`,
		"unknown members with nulls": `{"role":"user","content":"x","unknown":[1,{"a":null}]}`,
		"extra null":                 `{"role":"user","content":"x","extra":null}`,
	}
	for name, m := range cases {
		t.Run(name, func(t *testing.T) {
			for _, body := range []string{`{"model":"m","messages":[` + m + `]}`,
				`{"model":"m","messages":[{"role":"user","content":"a"},` + m + `]}`} {
				sameAsDecoded(t, []byte(body))
			}
		})
	}
}
