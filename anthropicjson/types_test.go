package anthropicjson

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestKnownNamesMatchTags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v     any
		names []string
	}{
		{Request{}, requestNames},
		{Message{}, messageNames},
		{ContentBlock{}, blockNames},
		{Tool{}, toolNames},
		{Response{}, responseNames},
		{Usage{}, usageNames},
		{DeltaUsage{}, deltaUsageNames},
	} {
		typ := reflect.TypeOf(tc.v)
		t.Run(typ.Name(), func(t *testing.T) {
			var tags []string
			for i := range typ.NumField() {
				name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
				if name != "-" {
					tags = append(tags, name)
				}
			}
			require.Equal(t, tags, tc.names)
		})
	}
}

// Each recorded response decodes and encodes back to the same JSON: unknown
// members (cache_creation, service_tier) survive in Extra.
func TestRecordedResponsesRoundTrip(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/recordings/messages*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			var r Response
			require.NoError(t, json.Unmarshal(data, &r))
			out, err := json.Marshal(r)
			require.NoError(t, err)
			require.JSONEq(t, string(data), string(out))
		})
	}
}

func TestBlocksWriteTheirRequiredMembers(t *testing.T) {
	t.Parallel()
	yes := true
	for _, tc := range []struct {
		name  string
		block ContentBlock
		want  string
	}{
		{"empty text", ContentBlock{Type: BlockText}, `{"type":"text","text":""}`},
		{"tool_use without input", ContentBlock{Type: BlockToolUse, ID: "t1", Name: "f"}, `{"type":"tool_use","id":"t1","name":"f","input":{}}`},
		{"empty thinking", ContentBlock{Type: BlockThinking}, `{"type":"thinking","thinking":"","signature":""}`},
		{"tool_result string", ContentBlock{Type: BlockToolResult, ToolUseID: "t1", Content: &Content{IsString: true, Text: "ok"}, IsError: &yes},
			`{"type":"tool_result","tool_use_id":"t1","content":"ok","is_error":true}`},
		{"image base64", ContentBlock{Type: BlockImage, Source: &ImageSource{Type: "base64", MediaType: "image/png", Data: "AAA"}, CacheControl: json.RawMessage(`{"type":"ephemeral"}`)},
			`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAA"},"cache_control":{"type":"ephemeral"}}`},
		{"unknown type keeps members", ContentBlock{Type: "web_search_tool_result", ToolUseID: "s1", Extra: Extra{"content": json.RawMessage(`[1]`), "zz": json.RawMessage(`2`)}},
			`{"type":"web_search_tool_result","tool_use_id":"s1","content":[1],"zz":2}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := json.Marshal(tc.block)
			require.NoError(t, err)
			require.JSONEq(t, tc.want, string(out))
		})
	}
}

func TestDeltasWriteTheirMember(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		delta Delta
		want  string
	}{
		{Delta{Type: DeltaText}, `{"type":"text_delta","text":""}`},
		{Delta{Type: DeltaInputJSON}, `{"type":"input_json_delta","partial_json":""}`},
		{Delta{Type: DeltaThinking, Thinking: "hm"}, `{"type":"thinking_delta","thinking":"hm"}`},
		{Delta{Type: DeltaSignature, Signature: "s"}, `{"type":"signature_delta","signature":"s"}`},
	} {
		t.Run(tc.delta.Type, func(t *testing.T) {
			out, err := json.Marshal(tc.delta)
			require.NoError(t, err)
			require.JSONEq(t, tc.want, string(out))
		})
	}
}

func TestRequestKeepsUnknownMembers(t *testing.T) {
	t.Parallel()
	in := `{"model":"m","max_tokens":5,"system":[{"type":"text","text":"be brief","cache_control":{"type":"ephemeral"}}],
		"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"x","signature":"sig"},{"type":"text","text":"yo"}]}],
		"tool_choice":{"type":"any","disable_parallel_tool_use":true},"thinking":{"type":"enabled","budget_tokens":1024},
		"metadata":{"user_id":"u"},"service_tier":"auto","container":{"id":"c"}}`
	var r Request
	require.NoError(t, json.Unmarshal([]byte(in), &r))
	require.Equal(t, Extra{"service_tier": json.RawMessage(`"auto"`), "container": json.RawMessage(`{"id":"c"}`)}, r.Extra)
	require.True(t, r.Messages[0].Content.IsString)
	require.Len(t, r.System.Blocks, 1)
	out, err := json.Marshal(r)
	require.NoError(t, err)
	require.JSONEq(t, in, string(out))
}

// A server tool's result whose content is an object (an error) decodes, and
// encodes back as it was; on a tool_result that content is an error.
func TestServerToolResultContentSurvives(t *testing.T) {
	t.Parallel()
	in := `{"type":"web_search_tool_result","tool_use_id":"s1","content":{"type":"web_search_tool_result_error","error_code":"max_uses_exceeded"}}`
	var b ContentBlock
	require.NoError(t, json.Unmarshal([]byte(in), &b))
	require.Nil(t, b.Content)
	out, err := json.Marshal(b)
	require.NoError(t, err)
	require.JSONEq(t, in, string(out))
	require.Error(t, json.Unmarshal([]byte(`{"type":"tool_result","tool_use_id":"t","content":{"a":1}}`), &b))
}

func TestContentRefusesOtherShapes(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`1`, `{}`, `true`} {
		t.Run(in, func(t *testing.T) {
			var c Content
			require.Error(t, json.Unmarshal([]byte(in), &c))
		})
	}
	var c Content
	require.NoError(t, json.Unmarshal([]byte(`null`), &c))
	require.Equal(t, Content{}, c)
}
