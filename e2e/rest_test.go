package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/fakeupstream"
)

func post(t *testing.T, url, body string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

type errorBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

func readError(t *testing.T, resp *http.Response) errorBody {
	t.Helper()
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var raw map[string]map[string]any
	b, _ := io.ReadAll(resp.Body)
	require.NoError(t, json.Unmarshal(b, &raw), string(b))
	for _, k := range []string{"message", "type", "param", "code"} {
		require.Contains(t, raw["error"], k, "OpenAI error bodies always carry %q: %s", k, b)
	}
	var e errorBody
	require.NoError(t, json.Unmarshal(b, &e))
	return e
}

const chatBody = `{"model":"up/gpt-4o","messages":[{"role":"user","content":"hi"}]`

func TestRESTBadInput(t *testing.T) {
	t.Parallel()
	g := start(t, "  max_body_bytes: 2048\n")
	url := g.base + "/chat/completions"
	cases := []struct {
		name, body string
		status     int
		param      string
	}{
		{"malformed JSON", `{"model":`, 400, ""},
		{"not an object", `[1,2]`, 400, ""},
		{"wrong type", chatBody + `,"temperature":"warm"}`, 400, "temperature"},
		{"wrong nested type", `{"model":"up/gpt-4o","messages":[{"role":7}]}`, 400, "messages[0].role"},
		{"missing model", `{"messages":[{"role":"user","content":"hi"}]}`, 400, "model"},
		{"missing messages", `{"model":"up/gpt-4o"}`, 400, "messages"},
		{"unknown model", `{"model":"x/y/z","messages":[{"role":"user","content":"hi"}]}`, 404, "model"},
		{"too large", chatBody + `,"user":"` + strings.Repeat("x", 4096) + `"}`, 413, ""},
		{"stream with wrong type", chatBody + `,"stream":true,"n":"two"}`, 400, "n"},
	}
	for _, tc := range cases { // not in parallel: the check below follows them
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t, url, tc.body)
			require.Equal(t, tc.status, resp.StatusCode)
			e := readError(t, resp)
			require.NotEmpty(t, e.Error.Message)
			if tc.param != "" {
				require.NotNil(t, e.Error.Param)
				require.Equal(t, tc.param, *e.Error.Param)
			}
		})
	}
	require.Zero(t, g.up.Count(), "bad input never reaches the upstream")

	resp, err := http.Get(g.base + "/nothing-here")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 404, resp.StatusCode)
	readError(t, resp)
}

// sseEvents reads a whole SSE body, checking the framing: every event is exactly
// "data: <payload>\n\n".
func sseEvents(t *testing.T, resp *http.Response) []string {
	t.Helper()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	text := string(b)
	require.True(t, strings.HasSuffix(text, "\n\n"), "every event ends with a blank line")
	var events []string
	for _, ev := range strings.Split(strings.TrimSuffix(text, "\n\n"), "\n\n") {
		require.True(t, strings.HasPrefix(ev, "data: "), "event %q", ev)
		require.NotContains(t, ev, "\n", "one data line per event")
		events = append(events, strings.TrimPrefix(ev, "data: "))
	}
	return events
}

func TestRESTStreamFraming(t *testing.T) {
	t.Parallel()
	g := start(t, "")
	resp := post(t, g.base+"/chat/completions", chatBody+`,"stream":true,"stream_options":{"include_usage":true}}`,
		"X-Request-Id", "req-123")
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, "up/gpt-4o", resp.Header.Get("X-Switchyard-Target"))
	require.Equal(t, "req-123", resp.Header.Get("X-Request-Id"))
	for k := range resp.Header {
		require.False(t, strings.HasPrefix(strings.ToLower(k), "grpc-"), "leaked header %s", k)
	}
	events := sseEvents(t, resp)
	require.Equal(t, "[DONE]", events[len(events)-1])
	var first map[string]any
	require.NoError(t, json.Unmarshal([]byte(events[0]), &first))
	require.Equal(t, float64(1769092764), first["created"], "created is a JSON number")
	require.Equal(t, "chat.completion.chunk", first["object"])
	choice := first["choices"].([]any)[0].(map[string]any)
	require.Equal(t, float64(0), choice["index"], "choices[].index is always present")
	require.Equal(t, "assistant", choice["delta"].(map[string]any)["role"])
	require.Equal(t, "iPgRzm", first["obfuscation"], "unknown response members reach the client")
	var usage map[string]any
	require.NoError(t, json.Unmarshal([]byte(events[len(events)-2]), &usage))
	require.Equal(t, []any{}, usage["choices"])
	require.Equal(t, float64(21), usage["usage"].(map[string]any)["total_tokens"])
	require.Equal(t, "req-123", g.up.Requests()[0].Header.Get("X-Request-Id"), "the request id reaches the upstream")
}

func TestRESTStreamFailureBeforeFirstEventIsPlainJSON(t *testing.T) {
	t.Parallel()
	g := start(t, "", withYAML(noRetries)) // a stream is retried before its first event like a unary call
	cases := []struct {
		name   string
		reply  fakeupstream.Reply
		status int
	}{
		{"upstream status", fakeupstream.Reply{Status: 400}, 400},
		{"hidden error in first event", fakeupstream.Reply{Events: []string{`{"error":{"message":"slow down","code":429}}`}}, 429},
		{"empty 200 stream", fakeupstream.Reply{Events: []string{}}, 502},
	}
	for _, tc := range cases { // one after another: they share the scripted upstream
		t.Run(tc.name, func(t *testing.T) {
			g.up.Script(tc.reply)
			resp := post(t, g.base+"/chat/completions", chatBody+`,"stream":true}`)
			require.Equal(t, tc.status, resp.StatusCode)
			readError(t, resp)
		})
	}
}

func TestRESTStreamCutMidwayEndsWithInBandError(t *testing.T) {
	t.Parallel()
	g := start(t, "")
	g.up.Script(fakeupstream.Reply{Text: "one two three", CutAfter: 2})
	resp := post(t, g.base+"/chat/completions", chatBody+`,"stream":true}`)
	require.Equal(t, 200, resp.StatusCode)
	events := sseEvents(t, resp)
	require.Len(t, events, 3, "two forwarded chunks, then one error event")
	require.NotContains(t, events, "[DONE]")
	var last errorBody
	require.NoError(t, json.Unmarshal([]byte(events[2]), &last))
	require.Equal(t, "stream_incomplete", *last.Error.Code)
}

func TestRESTReplaysRecordedOpenAITraffic(t *testing.T) {
	t.Parallel()
	g := start(t, "")
	recorded, err := os.ReadFile("../internal/fakeupstream/testdata/chat_completion.json")
	require.NoError(t, err)
	g.up.Script(fakeupstream.Reply{Body: string(recorded)})
	resp := post(t, g.base+"/chat/completions", chatBody+`}`)
	require.Equal(t, 200, resp.StatusCode)
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	// A complete answer goes to REST callers as the upstream sent it, byte for byte.
	require.Equal(t, string(recorded), string(got))

	lines := readLines(t, "../internal/fakeupstream/testdata/chat_completion_stream.txt")
	g.up.Script(fakeupstream.Reply{Events: lines})
	resp = post(t, g.base+"/chat/completions", chatBody+`,"stream":true}`)
	events := sseEvents(t, resp)
	require.Len(t, events, len(lines))
	var text strings.Builder
	for _, ev := range events[:len(events)-1] {
		var c struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal([]byte(ev), &c))
		text.WriteString(c.Choices[0].Delta.Content)
	}
	require.Equal(t, "Hello, World!", text.String())
}

func readLines(t *testing.T, path string) []string {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, rest)
		}
	}
	return out
}

func TestHealthEndpoints(t *testing.T) {
	t.Parallel()
	g := start(t, "  master_key: sk-master\n")
	for _, p := range []string{"/health", "/health/ready"} {
		resp, err := http.Get("http://" + g.app.HTTPAddr() + p)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode, p)
	}
}

// A non-stream answer goes to a REST caller as the upstream sent it when it is
// complete (nothing to fill in), and decoded and completed otherwise; either
// way its usage is counted, and a gRPC caller gets the whole answer decoded.
func TestRESTAnswerIsRelayedWhenComplete(t *testing.T) {
	t.Parallel()
	g := start(t, "")
	usage := `"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":3}}`
	msg := `"choices":[{"index":0,"message":{"role":"assistant","content":"hi \u2028 there","x_vendor":{"a":[1,2]}},"finish_reason":"stop"}]`
	cases := []struct {
		name, body string
		relayed    bool
		want       map[string]any // members of the answer (top level) a caller must see
	}{
		{"complete", `{"id":"c1","object":"chat.completion","created":7,"model":"up-model",` + msg + `,` + usage + `, "x_top" : 1.50 }`, true, nil},
		{"no object", `{"id":"c1","created":7,"model":"up-model",` + msg + `,` + usage + `}`, false,
			map[string]any{"object": "chat.completion"}},
		{"created 0", `{"id":"c1","object":"chat.completion","created":0,"model":"up-model",` + msg + `,` + usage + `}`, false, nil},
		{"no usage", `{"id":"c1","object":"chat.completion","created":7,"model":"up-model",` + msg + `}`, false, nil},
		{"no role", `{"id":"c1","object":"chat.completion","created":7,"model":"up-model",` +
			`"choices":[{"index":0,"message":{"content":"hi"},"finish_reason":"stop"}],` + usage + `}`, false, nil},
		{"spaced, complete", `{"id": "c1", "object": "chat.completion", "created": 7, "model": "up-model", ` + msg + `, ` + usage + `}`, true, nil},
		{"spaced, empty object", `{"id": "c1", "object": "", "created": 7, "model": "up-model", ` + msg + `, ` + usage + `}`, false,
			map[string]any{"object": "chat.completion"}},
		{"no id", `{"object":"chat.completion","created":7,"model":"up-model",` + msg + `,` + usage + `}`, false, nil},
		{"invalid UTF-8", `{"id":"c1","object":"chat.completion","created":7,"model":"up-model",` +
			"\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"h\xffi\"},\"finish_reason\":\"stop\"}]," + usage + `}`, false, nil},
		{"a lone surrogate", `{"id":"c1","object":"chat.completion","created":7,"model":"up-model",` +
			`"choices":[{"index":0,"message":{"role":"assistant","content":"\ud800"},"finish_reason":"stop"}],` + usage + `}`, false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g.up.Script(fakeupstream.Reply{Body: tc.body})
			resp := post(t, g.base+"/chat/completions", chatBody+`}`)
			require.Equal(t, 200, resp.StatusCode)
			got, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			if tc.relayed {
				require.Equal(t, tc.body, string(got))
			} else {
				require.NotEqual(t, tc.body, string(got))
				var m map[string]any
				require.NoError(t, json.Unmarshal(got, &m))
				require.NotEmpty(t, m["object"])
				require.NotZero(t, m["created"])
				require.NotNil(t, m["usage"])
				require.Equal(t, "assistant", m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["role"])
				for k, v := range tc.want {
					require.Equal(t, v, m[k], k)
				}
			}
			if strings.Contains(tc.body, "prompt_tokens") {
				require.Equal(t, "5", resp.Header.Get("X-Switchyard-Prompt-Tokens"))
				require.Equal(t, "3", resp.Header.Get("X-Switchyard-Cached-Tokens"))
			}

			g.up.Script(fakeupstream.Reply{Body: tc.body})
			out, err := pb.NewChatServiceClient(g.conn).CreateChatCompletion(context.Background(), &pb.ChatCompletionRequest{
				Model: "up/gpt-4o", Messages: []*pb.ChatMessage{{Role: "user", Content: structpb.NewStringValue("hi")}}})
			require.NoError(t, err)
			if strings.Contains(tc.body, `"c1"`) {
				require.Equal(t, "c1", out.GetId())
			}
			require.NotEmpty(t, out.GetChoices()[0].GetMessage().GetContent().GetStringValue(), "gRPC gets the whole answer")
		})
	}
}

// A stream chunk whose text decoding would mend (invalid UTF-8) is not relayed
// as the upstream sent it: REST callers get what gRPC callers get, U+FFFD, in
// valid UTF-8; a chunk that needs nothing goes as it came.
func TestRESTStreamChunkWithInvalidUTF8IsMended(t *testing.T) {
	t.Parallel()
	g := start(t, "")
	head := `{"id":"c1","object":"chat.completion.chunk","created":7,"model":"up-model",`
	plain := head + `"choices":[{"index":0,"delta":{"role":"assistant","content":"ok "},"finish_reason":null}]}`
	g.up.Script(fakeupstream.Reply{Events: []string{
		plain,
		head + `"choices":[{"index":0,"delta":{"content":"h` + "\xff" + `i"},"finish_reason":null}]}`,
		head + `"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		"[DONE]",
	}})
	resp := post(t, g.base+"/chat/completions", chatBody+`,"stream":true}`)
	require.Equal(t, 200, resp.StatusCode)
	events := sseEvents(t, resp)
	require.Len(t, events, 4)
	require.Equal(t, plain, events[0], "a chunk that needs nothing goes as it came")
	require.True(t, utf8.ValidString(events[1]), "%q", events[1])
	var c struct {
		Choices []struct {
			Delta struct{ Content string } `json:"delta"`
		} `json:"choices"`
	}
	require.NoError(t, json.Unmarshal([]byte(events[1]), &c))
	require.Equal(t, "h\uFFFDi", c.Choices[0].Delta.Content)
}
