package openaijson

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
)

// answerSeeds are non-stream answers with every member the fast paths write:
// the recorded ones, and made-up ones with the rare members.
func answerSeeds() map[string]string {
	seeds := map[string]string{}
	for i, s := range []string{
		`{"id":"x","object":"chat.completion","created":1,"model":"m","system_fingerprint":"fp","service_tier":"default",` +
			`"choices":[{"index":0,"message":{"role":"assistant","content":"a\"\n\u2028"},"finish_reason":"stop","logprobs":{"content":[]}},` +
			`{"index":1,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls","z":1}],` +
			`"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":1},"completion_tokens_details":{"reasoning_tokens":2},"cost":0.5},"zz":[true]}`,
		`{"choices":[]}`,
		`{"id":"","choices":[{"index":0}],"usage":{}}`,
		`{"choices":[{"message":{"role":"assistant","content":"x"},"extra":{"kept":1}}],"extra":2}`,
	} {
		seeds["made-up "+strconv.Itoa(i)] = s
	}
	files, _ := filepath.Glob("../../shared/corpus/provider-recordings/*/*.json")
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), `"chat.completion"`) {
			seeds[filepath.Base(filepath.Dir(f))+"/"+filepath.Base(f)] = string(b)
		}
	}
	return seeds
}

// The non-stream answer's fast paths write exactly what the reflection encoder
// writes for the same message (each level against appendObject, whose nested
// messages take the fast paths proven at their own level).
func TestAnswerFastPathIsTheGenericOne(t *testing.T) {
	for name, seed := range answerSeeds() {
		t.Run(name, func(t *testing.T) { sameAnswerEncoding(t, []byte(seed)) })
	}
}

func FuzzAnswerFastPath(f *testing.F) {
	for _, seed := range answerSeeds() {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) { sameAnswerEncoding(t, data) })
}

func sameAnswerEncoding(t *testing.T, data []byte) {
	t.Helper()
	var c pb.ChatCompletion
	if UnmarshalCompletion(data, &c) != nil {
		return
	}
	same := func(what string, fast, generic []byte) {
		if string(fast) != string(generic) {
			t.Fatalf("%s: fast path %s, generic %s, for %q", what, fast, generic, data)
		}
	}
	same("completion", appendCompletion(nil, &c), appendObject(nil, c.ProtoReflect(), nil, nil))
	for _, ch := range c.Choices {
		same("choice", appendChoice(nil, ch), appendObject(nil, ch.ProtoReflect(), nil, nil))
	}
	if c.Usage != nil {
		same("usage", appendUsage(nil, c.Usage), appendObject(nil, c.Usage.ProtoReflect(), nil, nil))
	}
}

// A nil message in a list is written as the empty message it reads as, on the
// fast paths as on the generic one (they never dereference it).
func TestNilMessagesAreEmpty(t *testing.T) {
	cases := map[string]struct {
		msg  *pb.ChatCompletion
		want string
	}{
		"nil choice":     {&pb.ChatCompletion{Choices: []*pb.Choice{nil}}, `{"id":"","object":"","created":0,"model":"","choices":[{"index":0}]}`},
		"nil completion": {nil, `{"id":"","object":"","created":0,"model":"","choices":[]}`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := string(Marshal(tc.msg)); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
	req := &pb.ChatCompletionRequest{Messages: []*pb.ChatMessage{nil}}
	if got := string(Marshal(req)); !strings.Contains(got, `"messages":[{"role":""}]`) {
		t.Fatalf("a nil ChatMessage: %s", got)
	}
}
