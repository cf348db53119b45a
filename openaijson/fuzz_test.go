package openaijson_test

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/openaijson"
	"github.com/switchyard/switchyard/providers"
)

// seeds are the fuzz targets' starting points: realistic bodies, the shapes the
// issue named, nesting at and past MaxDepth, strings encoding/json reads its own way.
func seeds(f *testing.F) {
	f.Helper()
	head := `{"id":"x","object":"chat.completion.chunk","created":1,"model":"m",`
	for _, seed := range []string{
		benchRequest, `{}`, `{"choices":[{"index":0,"delta":{"content":"a\u00e9\ud83d\ude00"}}],"x":[1,{"y":null}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"stop":["a"],"logit_bias":{"1":-5}}`,
		`{"error":{"message":"x","code":429}}`, `{"a":1e400}`, `{"seed":-9007199254740993}`, `{"n":1.0}`, `[`, `{"a":"\`,
		`{"model":"\ud83d\u0041","x":"\ude00\ud83d\ude00"}`, "{\"model\":\"\xff\xfe\"}", `{"extra":{"a":1}}`,
		head + `"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}`,
		head + `"choices":[{"index": 0, "delta": {}, "finish_reason": ""}]}`, // spaced, as json.dumps writes: "" is no finish
		head + `"choices":[],"usage":{"prompt_tokens":17,"completion_tokens":4,"total_tokens":21}}`,
		head + `"created":true,"choices":[]}`, head + `"choices":[{"index":0,"delta":5}]}`,
		head + `"choices":[{"index":1.5,"delta":{}}]}`, head + `"choices":[{"index":1.0,"delta":{},"finish_reason":"stop"}]}`,
		head + `"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"{}"}}]}}]}`,
		`{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"total_tokens":3}}`,
		`{"messages":[1],"messages":[],"usage":{"prompt_tokens":1},"usage":null}`,
		`{"x":` + nested(openaijson.MaxDepth-1, "") + `}`, `{"x":` + nested(openaijson.MaxDepth, "") + `}`,
		`{"x":` + nested(10_000, "") + `}`, `{"x":` + nested(openaijson.MaxDepth, "") + `,`,
		head + `"choices":[{"index":0,"delta":{},"logprobs":{"a":` + nested(openaijson.MaxDepth-3, "1") + `}}]}`,
		// members given twice (the last counts) where the first choice's block is reused or not
		head + `"choices":[{"delta":{"role":"assistant","content":"a"},"delta":{"content":"b"}}]}`,
		head + `"choices":[{"delta":{"content":"a","content":null,"refusal":"r"}},{"delta":{"content":"c"}}]}`,
		head + `"choices":[{"delta":{"content":"a"}}],"choices":[{"delta":{"role":"user"},"delta":null}]}`,
	} {
		f.Add([]byte(seed))
	}
	for _, name := range []string{"chat_completion.json", "chat_with_tools.json", "groq_chat_with_tools.json"} {
		if data, err := os.ReadFile("../internal/fakeupstream/testdata/" + name); err == nil {
			f.Add(data)
		}
	}
	if raw, err := os.ReadFile("../internal/fakeupstream/testdata/openai_tool_call_stream.txt"); err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok && data != "[DONE]" {
				f.Add([]byte(data))
			}
		}
	}
}

// FuzzRequest holds the request decoder to encoding/json: the same verdict on
// what is JSON (but for the documented differences, see oracle_test.go) and the
// same strings, numbers and unknown members.
func FuzzRequest(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var req pb.ChatCompletionRequest
		err := openaijson.Unmarshal(data, &req)
		checkVerdict(t, data, err)
		if err == nil {
			checkMessage(t, data, req.ProtoReflect())
		}
	})
}

// FuzzCompletion: the response decoders, fast and generic, against encoding/json
// and each other.
func FuzzCompletion(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast, generic pb.ChatCompletion
		err := openaijson.UnmarshalCompletion(data, &fast)
		checkVerdict(t, data, err)
		if genericErr := openaijson.Unmarshal(data, &generic); !sameError(err, genericErr) {
			t.Fatalf("UnmarshalCompletion error %v, Unmarshal error %v, for %q", err, genericErr, data)
		}
		if err == nil {
			checkMessage(t, data, fast.ProtoReflect())
			if !proto.Equal(&fast, &generic) {
				t.Fatalf("UnmarshalCompletion and Unmarshal differ for %q", data)
			}
		}
	})
}

// FuzzChunk: the stream chunk decoders, fast and generic, against encoding/json
// and each other.
func FuzzChunk(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast, generic pb.ChatCompletionChunk
		err := openaijson.UnmarshalChunk(data, &fast)
		checkVerdict(t, data, err)
		if genericErr := openaijson.Unmarshal(data, &generic); !sameError(err, genericErr) {
			t.Fatalf("UnmarshalChunk error %v, Unmarshal error %v, for %q", err, genericErr, data)
		}
		if err == nil {
			checkMessage(t, data, fast.ProtoReflect())
			if !proto.Equal(&fast, &generic) {
				t.Fatalf("UnmarshalChunk and Unmarshal differ for %q", data)
			}
		}
	})
}

// FuzzInspectChunk: InspectChunk gives UnmarshalChunk's verdict and error on every
// input, and what it reports matches the decoded chunk.
func FuzzInspectChunk(f *testing.F) {
	seeds(f)
	f.Add([]byte(`{"choices":[],"usage":{"total_tokens":7},"usage":{}}`)) // the last usage member counts
	for _, delta := range []string{`{"extra":{"reasoning_content":"x"}}`, `{"reasoning":"a","extra":{}}`, `{"tool_calls":null}`,
		`{"content":"a","content":null}`, `{"reasoning_content":{"x":"y"}}`} {
		f.Add([]byte(`{"choices":[{"index":0,"delta":` + delta + `}]}`))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := openaijson.InspectChunk(data)
		var c pb.ChatCompletionChunk
		if decodeErr := openaijson.UnmarshalChunk(data, &c); !sameError(err, decodeErr) {
			t.Fatalf("InspectChunk error %v, UnmarshalChunk error %v, for %q", err, decodeErr, data)
		}
		checkVerdict(t, data, err)
		if err != nil {
			return
		}
		u := c.GetUsage()
		want := openaijson.ChunkInfo{Usage: c.Usage != nil, PromptTokens: int(u.GetPromptTokens()),
			CompletionTokens: int(u.GetCompletionTokens()), TotalTokens: int(u.GetTotalTokens()),
			CachedTokens:    openaijson.DetailTokens(u.GetPromptTokensDetails(), "cached_tokens"),
			ReasoningTokens: openaijson.DetailTokens(u.GetCompletionTokensDetails(), "reasoning_tokens")}
		want.UsageOnly = want.Usage && len(c.GetChoices()) == 0
		want.Choices = len(c.GetChoices())
		for _, ch := range c.GetChoices() {
			want.Finished = want.Finished || ch.GetFinishReason() != ""
			want.NonZeroIndex = want.NonZeroIndex || ch.GetIndex() != 0
		}
		want.Content = providers.HasContent(&c)
		if e, ok := c.GetExtra().GetFields()["error"]; ok {
			_, null := e.GetKind().(*structpb.Value_NullValue)
			want.Error = !null
		}
		top := oracle(t, data).(map[string]any)
		_, id := top["id"].(string)
		_, object := top["object"].(string)
		_, model := top["model"].(string)
		choices, isList := top["choices"].([]any)
		want.Complete = id && object && top["created"] != nil && model && isList
		for _, ch := range choices {
			want.Complete = want.Complete && ch.(map[string]any)["index"] != nil
		}
		want.Complete = faithfulVerdict(t, "InspectChunk", data, want.Complete, info.Complete)
		if info != want {
			t.Fatalf("InspectChunk says %+v, the decoded chunk %+v, for %q", info, want, data)
		}
	})
}

// FuzzValue: the google.protobuf.Value path (every unknown member, content,
// stop, tool_choice, Struct fields) decodes any JSON exactly as encoding/json
// decodes it into an any. The input is wrapped in an object, which Unmarshal needs.
func FuzzValue(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		data = append(append([]byte(`{"v":`), data...), '}')
		var st structpb.Struct
		err := openaijson.Unmarshal(data, &st)
		if !json.Valid(data) || depth(data) > openaijson.MaxDepth {
			checkVerdict(t, data, err)
			return
		}
		var want any
		if json.Unmarshal(data, &want) != nil { // a number past float64
			if err == nil {
				t.Fatalf("accepted %q, which encoding/json refuses", data)
			}
			return
		}
		if err != nil {
			t.Fatalf("refused %q: %v", data, err)
		}
		if msg := sameAny(st.AsMap(), want, "value"); msg != "" {
			t.Fatalf("%s: %q", msg, data)
		}
	})
}

func sameError(a, b error) bool {
	return (a == nil) == (b == nil) && (a == nil || a.Error() == b.Error())
}

// FuzzDecode: any input gives an error or a message; a decoded message encodes to
// valid JSON that decodes to the same message; invalid JSON is never accepted.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		benchRequest, `{}`, `{"choices":[{"index":0,"delta":{"content":"a\u00e9\ud83d\ude00"}}],"x":[1,{"y":null}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"stop":["a"],"logit_bias":{"1":-5}}`,
		`{"error":{"message":"x","code":429}}`, `{"a":1e400}`, `{"seed":-9007199254740993}`, `{"n":1.0}`, `[`, `{"a":"\`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := openaijson.InspectChunk(data); err == nil && !json.Valid(data) {
			t.Fatalf("InspectChunk accepted invalid JSON %q", data)
		}
		var fast, generic pb.ChatCompletionChunk
		errFast, errGeneric := openaijson.UnmarshalChunk(data, &fast), openaijson.Unmarshal(data, &generic)
		if (errFast == nil) != (errGeneric == nil) || (errFast != nil && errFast.Error() != errGeneric.Error()) {
			t.Fatalf("UnmarshalChunk error %v, Unmarshal error %v, for %q", errFast, errGeneric, data)
		}
		if errFast == nil && !proto.Equal(&fast, &generic) {
			t.Fatalf("UnmarshalChunk and Unmarshal differ for %q", data)
		}
		var fastC, genericC pb.ChatCompletion
		errFast, errGeneric = openaijson.UnmarshalCompletion(data, &fastC), openaijson.Unmarshal(data, &genericC)
		if (errFast == nil) != (errGeneric == nil) || (errFast != nil && errFast.Error() != errGeneric.Error()) {
			t.Fatalf("UnmarshalCompletion error %v, Unmarshal error %v, for %q", errFast, errGeneric, data)
		}
		if errFast == nil && !proto.Equal(&fastC, &genericC) {
			t.Fatalf("UnmarshalCompletion and Unmarshal differ for %q", data)
		}
		for _, msg := range []proto.Message{&pb.ChatCompletionRequest{}, &pb.ChatCompletion{}, &pb.ChatCompletionChunk{}} {
			if err := openaijson.Unmarshal(data, msg); err != nil {
				continue
			}
			if !json.Valid(data) {
				t.Fatalf("accepted invalid JSON %q", data)
			}
			out := openaijson.Marshal(msg)
			if !json.Valid(out) {
				t.Fatalf("encoded invalid JSON %q from %q", out, data)
			}
			again := proto.Clone(msg)
			if err := openaijson.Unmarshal(out, again); err != nil {
				t.Fatalf("re-decoding %q: %v", out, err)
			}
			if !proto.Equal(msg, again) {
				t.Fatalf("round trip changed the message:\n%q\n%q", data, out)
			}
		}
	})
}

// FuzzStringEncoding: any Go string, valid UTF-8 or not, is written as a JSON
// string that encoding/json reads back as what it reads back from its own
// encoding of the same string (invalid bytes become U+FFFD one by one), and
// U+2028/U+2029 are escaped as encoding/json escapes them.
func FuzzStringEncoding(f *testing.F) {
	for _, seed := range []string{"", "plain", "a\"b\\c\n\r\t\x01\x1f", "café 漢字 ✓ 😀", "\xff\xe6\xbc", "\xed\xa0\x80",
		"\xf4\x90\x80\x80", "\xc0\x80", "\u2028\u2029", "12345678\"12345678\\", "漢漢漢漢漢漢漢漢漢"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ours := openaijson.Marshal(structpb.NewStringValue(s))
		if !json.Valid(ours) {
			t.Fatalf("invalid JSON %q for %q", ours, s)
		}
		theirs, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var got, want string
		if err := json.Unmarshal(ours, &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(theirs, &want); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("%q reads back as %q, encoding/json's as %q", s, got, want)
		}
		if bytes.Contains(ours, []byte("\u2028")) || bytes.Contains(ours, []byte("\u2029")) {
			t.Fatalf("U+2028/U+2029 not escaped in %q", ours)
		}
	})
}

// FuzzInspectCompletion: InspectCompletion (the REST front's check before it
// relays a non-stream answer as the upstream sent it) accepts exactly what
// UnmarshalCompletion accepts, reads the counts the decoded message holds, and
// calls it Complete only when the decoded message needs nothing filled in.
func FuzzInspectCompletion(f *testing.F) {
	seeds(f)
	full := `{"id":"c","object":"chat.completion","created":1,"model":"m","usage":{"prompt_tokens":1,` +
		`"prompt_tokens_details":{"cached_tokens":2},"completion_tokens_details":{"reasoning_tokens":3}},`
	for _, seed := range []string{
		full + `"choices":[{"index":0,"message":{"role":"assistant","content":"hi","refusal":null,"annotations":[]},"finish_reason":"stop"}]}`,
		full + `"choices":[{"message":{"role":"","content":null}}]}`, full + `"choices":[{"message":null}]}`,
		full + `"created":0,"choices":[{"message":{"role":"a"}}]}`, full + `"object":"","choices":[{"message":{"role":"a"}}]}`,
		full + `"choices":[{"message":{"role":"a","tool_calls":[{"id":"t","type":"function","function":{"name":"f","arguments":"{}"}}]}}]}`,
		// as Python's json.dumps writes it: a space after each colon and comma
		`{"id": "c", "object": "", "created": 1, "model": "m", "usage": {}, "choices": [{"index": 0, "message": {"role": ""}}]}`,
		`{"id": "c", "object": "chat.completion", "created": 1, "model": "m", "usage": {}, "choices": [{"index": 0, "message": {"role": "assistant"}}]}`,
		full + `"choices":[{"index":0,"message":{"role":"a","content":"h` + "\xff" + `i"}}]}`,
		full + `"choices":[{"index":0,"message":{"role":"a","content":"\ud800"}}]}`,
		full + `"choices":[{"index":0,"message":{"role":"a","content":"x","content":"y"}}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := openaijson.InspectCompletion(data)
		var c pb.ChatCompletion
		decodeErr := openaijson.UnmarshalCompletion(data, &c)
		if (err == nil) != (decodeErr == nil) {
			t.Fatalf("InspectCompletion error %v, UnmarshalCompletion error %v, for %q", err, decodeErr, data)
		}
		if err != nil {
			return
		}
		u := c.GetUsage()
		want := openaijson.CompletionInfo{ID: c.Id, Model: c.Model, Choices: len(c.GetChoices()), Usage: c.Usage != nil, PromptTokens: int(u.GetPromptTokens()),
			CompletionTokens: int(u.GetCompletionTokens()), TotalTokens: int(u.GetTotalTokens()),
			CachedTokens:    openaijson.DetailTokens(u.GetPromptTokensDetails(), "cached_tokens"),
			ReasoningTokens: openaijson.DetailTokens(u.GetCompletionTokensDetails(), "reasoning_tokens")}
		if e, ok := c.GetExtra().GetFields()["error"]; ok {
			_, null := e.GetKind().(*structpb.Value_NullValue)
			want.Error = !null
		}
		top := oracle(t, data).(map[string]any)
		_, id := top["id"].(string)
		choices, isList := top["choices"].([]any)
		want.Complete = id && c.Object != "" && c.Model != "" && c.Created != 0 && c.Usage != nil && isList
		for i, ch := range c.GetChoices() {
			want.Complete = want.Complete && ch.GetMessage().GetRole() != "" && choices[i].(map[string]any)["index"] != nil &&
				ch.GetFinishReason() != ""
		}
		want.Complete = faithfulVerdict(t, "InspectCompletion", data, want.Complete, info.Complete)
		if info != want {
			t.Fatalf("InspectCompletion says %+v, the decoded completion %+v, for %q", info, want, data)
		}
	})
}

// faithfulVerdict checks an inspector's Complete against the structure the
// decoded message shows (structural): Complete also needs text that decodes to
// itself, so where the structure is complete and the inspector says it is not,
// there must be something decoding mends, and what it calls complete is valid
// UTF-8. It returns the Complete to expect.
func faithfulVerdict(t *testing.T, inspector string, data []byte, structural, complete bool) bool {
	t.Helper()
	if structural && !complete && !mayMend(data) {
		t.Fatalf("%s calls complete bytes incomplete, with nothing to mend: %q", inspector, data)
	}
	if complete && !utf8.Valid(data) {
		t.Fatalf("%s calls bytes complete that decoding would change: %q", inspector, data)
	}
	return structural && complete
}

// mayMend reports whether valid JSON might hold text decoding changes:
// invalid UTF-8, or a \u escape of a surrogate.
func mayMend(data []byte) bool {
	return !utf8.Valid(data) || bytes.Contains(bytes.ToLower(data), []byte(`\ud`))
}

// FuzzChunkReader: each chunk of a stream read by a ChunkReader (which takes a
// repeated envelope's values from the chunk read before) is the chunk decoded
// alone, with the same error, and the chunks before are left as they were. The
// input is a stream: one chunk per line.
func FuzzChunkReader(f *testing.F) {
	head := `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","system_fingerprint":"fp_1","service_tier":"default",`
	for _, seed := range [][]string{
		{head + `"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`, head + `"choices":[{"index":0,"delta":{"content":"a"}}]}`,
			head + `"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, head + `"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`},
		{head + `"choices":[]}`, head + `"choices":[],"id":"other"}`, head + `"choices":[]}`},                     // an envelope member after choices
		{head + `"choices":[]}`, head + `"choices" :[]}`, head + `"choices":[] , "model":"m2"}`, head + `"x":1}`}, // spaced, no choices
		{`{"usage":null,"id":"a","choices":[]}`, `{"usage":null,"id":"a","choices":[{"index":0,"delta":{"content":"b"}}]}`},
		{`{"id":"a","x":{"y":1},"choices":[]}`, `{"id":"a","x":{"y":1},"choices":[]}`},
		{`{"choices":[{"index":0,"delta":{"content":"a"}}]}`, `{"choices":[{"index":0,"delta":{"content":"b"}}]}`, `{"choices":1}`, `{"choices":[`},
		{`{"id":"a","id":"b","choices":[]}`, `{"id":"a","id":"b","choices":[],"choices":[{"index":1,"delta":{}}]}`},
		{`{"id":"\u00e9","choices":[]}`, `{"id":"\u00e9","choices":[]}`, `{"id":"\u00e9","choices":[],"extra":1}`},
		{head + `"choices":[]}`, head + `"choices":[]}}`, head + `"choices":[]`, head + `"choices":[]} `},
		// strings near the chunk before's, or equal to them only once decoded: not shared
		{head + `"choices":[]}`, `{"id":"chatcmpl-1\u0000","model":"gpt-4o ","system_fingerprint":null,"service_tier":"defaul","choices":[]}`},
		{`{"id":"\u00e9","model":"m"}`, `{"id":"é","model":"\u006d"}`},
		{`{"id":"\ud800"}`, "{\"id\":\"\xed\xa0\x80\"}"},
		{`{"id":"a\"b"}`, `{"id":"a\"b"}`},
	} {
		f.Add([]byte(strings.Join(seed, "\n")))
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		var r openaijson.ChunkReader
		var read []*pb.ChatCompletionChunk
		var kept []proto.Message
		for _, data := range bytes.Split(stream, []byte("\n")) {
			var got, alone pb.ChatCompletionChunk
			err := r.Next(data, &got)
			if aloneErr := openaijson.UnmarshalChunk(data, &alone); !sameError(err, aloneErr) {
				t.Fatalf("error %v, alone %v, for %q in %q", err, aloneErr, data, stream)
			}
			if err == nil && !proto.Equal(&got, &alone) {
				t.Fatalf("%v, alone %v, for %q in %q", &got, &alone, data, stream)
			}
			for i, c := range read {
				if !proto.Equal(c, kept[i]) {
					t.Fatalf("reading %q changed chunk %d of %q", data, i, stream)
				}
			}
			if err == nil {
				read, kept = append(read, &got), append(kept, proto.Clone(&got))
			}
		}
	})
}
