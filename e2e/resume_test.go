package e2e

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	adminpb "github.com/switchyard/switchyard/gen/switchyard/admin/v1"
	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/fakeupstream"
)

// Stream resume (issue 15 item 4): a text stream that breaks after its first byte
// is continued on the next target of its chain, spliced into the same stream.

const (
	// The primary sends the role chunk, "one " and "two ", then cuts.
	resumeFull    = "one two three four"
	resumePartial = "one two "
	resumeRest    = "three four"
)

// cut is the primary's broken stream: "one two ", then the connection is reset.
var cut = fakeupstream.Reply{Text: resumeFull, CutAfter: 3}

// resumeSetup is a gateway whose virtual model "resumed" chains up/gpt-4o (script
// it with cut) to the given targets among
// picky/gpt-4o-mini (refuses an assistant prefill with 400) and
// backup/gpt-4o-mini (answers "three four" under its own completion id).
type resumeSetup struct {
	g             *gateway
	picky, backup *fakeupstream.Server
}

func resumeGateway(t *testing.T, resumeYAML string, targets ...string) resumeSetup {
	t.Helper()
	return resumeGatewayWith(t, "", resumeYAML, targets...)
}

// resumeGatewayWith is resumeGateway with server settings.
func resumeGatewayWith(t *testing.T, serverYAML, resumeYAML string, targets ...string) resumeSetup {
	t.Helper()
	return resumeGatewayYAML(t, serverYAML, "", resumeYAML, targets...)
}

// resumeGatewayYAML is resumeGatewayWith with top-level configuration (pricing).
func resumeGatewayYAML(t *testing.T, serverYAML, topYAML, resumeYAML string, targets ...string) resumeSetup {
	t.Helper()
	backup := fakeupstream.New("gpt-4o-mini")
	t.Cleanup(backup.Close)
	backup.SetDefault(fakeupstream.Reply{Text: resumeRest, ID: "chatcmpl-backup"})
	picky := fakeupstream.New("gpt-4o-mini")
	t.Cleanup(picky.Close)
	picky.SetDefault(fakeupstream.Reply{Text: "from picky", ID: "chatcmpl-picky", RejectPrefill: true})
	var b strings.Builder
	b.WriteString("  backup:\n    type: openai\n    base_url: " + backup.URL + "\n")
	b.WriteString("  picky:\n    type: openai\n    base_url: " + picky.URL + "\n")
	b.WriteString("virtual_models:\n  - source: resumed\n" + resumeYAML + "    targets:\n      - model: up/gpt-4o\n")
	for _, tg := range targets {
		b.WriteString("      - model: " + tg + "\n")
	}
	b.WriteString(topYAML)
	g := start(t, serverYAML, withYAML(b.String()))
	return resumeSetup{g: g, picky: picky, backup: backup}
}

// requireContinuation checks that srv received the original request plus the
// partial answer as an assistant message.
func requireContinuation(t *testing.T, srv *fakeupstream.Server) {
	t.Helper()
	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	msgs := reqs[0].JSON()["messages"].([]any)
	require.Equal(t, []any{
		map[string]any{"role": "user", "content": "hi"},
		map[string]any{"role": "assistant", "content": resumePartial},
	}, msgs)
}

func TestResumeGoSDKAccumulator(t *testing.T) {
	t.Parallel()
	for _, usage := range []bool{true, false} {
		t.Run(map[bool]string{true: "usage", false: "no usage"}[usage], func(t *testing.T) {
			t.Parallel()
			s := resumeGateway(t, "    stream_resume: true\n", "backup/gpt-4o-mini")
			s.g.up.Script(cut)
			before := scrape(t, s.g)
			p := userMsg("hi")
			p.Model = "resumed"
			if usage {
				p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			}
			stream := sdk(s.g, "k").Chat.Completions.NewStreaming(context.Background(), p)
			acc := openai.ChatCompletionAccumulator{}
			ids, finishes, marked := map[string]bool{}, 0, []string{}
			for stream.Next() {
				c := stream.Current()
				require.True(t, acc.AddChunk(c), "the accumulator takes every chunk (one id)")
				ids[c.ID] = true
				for _, ch := range c.Choices {
					require.Equal(t, int64(0), ch.Index)
					if ch.FinishReason != "" {
						finishes++
					}
				}
				if f, ok := c.JSON.ExtraFields["switchyard"]; ok {
					marked = append(marked, f.Raw())
				}
			}
			require.NoError(t, stream.Err())
			require.Equal(t, map[string]bool{"chatcmpl-fake2": true}, ids, "one id, the first stream's")
			require.Equal(t, resumeFull, acc.Choices[0].Message.Content, "partial + continuation")
			require.Equal(t, "assistant", string(acc.Choices[0].Message.Role))
			require.Equal(t, "stop", acc.Choices[0].FinishReason)
			require.Equal(t, 1, finishes, "one finish chunk")
			require.Equal(t, []string{`{"resumed_from":"up/gpt-4o","resumed_to":"backup/gpt-4o-mini"}`}, marked,
				"the first spliced chunk names the resume")
			if usage {
				require.Equal(t, int64(21), acc.Usage.TotalTokens, "the usage reaches the client")
			} else {
				require.Zero(t, acc.Usage.TotalTokens)
			}
			requireContinuation(t, s.backup)
			require.Equal(t, int32(1), upBreaker(t, s.g).GetConsecutiveFailures(), "the broken target's breaker counts the cut")
			after := scrape(t, s.g)
			require.Equal(t, 1.0, delta(before, after, key("switchyard_stream_resumes_total",
				"from", "up/gpt-4o", "to", "backup/gpt-4o-mini", "outcome", "spliced")))
			logs := s.g.logs.String()
			require.Contains(t, logs, `"msg":"stream resumed"`)
			require.Contains(t, logs, `"target":"up/gpt-4o","resumed_to":"backup/gpt-4o-mini"`)
		})
	}
}

// restEvents streams model over REST with the given extra members.
func restEvents(t *testing.T, g *gateway, model, extra string) []string {
	t.Helper()
	resp := restStream(t, g, model, extra)
	require.Equal(t, 200, resp.StatusCode)
	return sseEvents(t, resp)
}

func TestResumeRESTSplice(t *testing.T) {
	t.Parallel()
	s := resumeGateway(t, "    stream_resume: {max_resumes: 1}\n", "backup/gpt-4o-mini")
	s.g.up.Script(cut)
	events := restEvents(t, s.g, "resumed", `,"stream_options":{"include_usage":true}`)
	text, done, incomplete := sseText(t, events)
	require.True(t, done)
	require.False(t, incomplete)
	require.Equal(t, resumeFull, text)
	roles, finishes, usages, marks := 0, 0, 0, 0
	for _, ev := range events[:len(events)-1] {
		var c struct {
			ID         string         `json:"id"`
			Model      string         `json:"model"`
			Usage      map[string]any `json:"usage"`
			Switchyard map[string]any `json:"switchyard"`
			Choices    []struct {
				Index        int     `json:"index"`
				FinishReason *string `json:"finish_reason"`
				Delta        struct {
					Role *string `json:"role"`
				} `json:"delta"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal([]byte(ev), &c))
		require.Equal(t, "chatcmpl-fake2", c.ID, ev)
		require.Equal(t, "gpt-4o", c.Model, "one answer, one model name")
		for _, ch := range c.Choices {
			require.Zero(t, ch.Index)
			if ch.Delta.Role != nil {
				roles++
			}
			if ch.FinishReason != nil {
				finishes++
			}
		}
		if c.Usage != nil {
			usages++
			require.Equal(t, float64(21), c.Usage["total_tokens"])
		}
		if c.Switchyard != nil {
			marks++
			require.Equal(t, "up/gpt-4o", c.Switchyard["resumed_from"])
		}
	}
	require.Equal(t, 1, roles, "one role")
	require.Equal(t, 1, finishes, "one finish chunk")
	require.Equal(t, 1, usages, "one usage")
	require.Equal(t, 1, marks, "one resume mark")
	requireContinuation(t, s.backup)
}

func TestResumeGRPCSplice(t *testing.T) {
	t.Parallel()
	s := resumeGateway(t, "    stream_resume: true\n", "backup/gpt-4o-mini")
	s.g.up.Script(cut)
	req := grpcReq()
	req.Model = "resumed"
	st, err := pb.NewChatServiceClient(s.g.conn).StreamChatCompletion(context.Background(), req)
	require.NoError(t, err)
	var b strings.Builder
	finishes, marks := 0, 0
	for {
		c, err := st.Recv()
		if err != nil {
			require.ErrorIs(t, err, io.EOF)
			break
		}
		require.Equal(t, "chatcmpl-fake2", c.GetId())
		for _, ch := range c.GetChoices() {
			require.Zero(t, ch.GetIndex())
			b.WriteString(ch.GetDelta().GetContent())
			if ch.GetFinishReason() != "" {
				finishes++
			}
		}
		if m := c.GetExtra().GetFields()["switchyard"]; m != nil {
			marks++
			require.Equal(t, "up/gpt-4o", m.GetStructValue().GetFields()["resumed_from"].GetStringValue())
		}
	}
	require.Equal(t, resumeFull, b.String())
	require.Equal(t, 1, finishes)
	require.Equal(t, 1, marks)
	requireContinuation(t, s.backup)
}

// toolCallEvents stream a tool call: the role chunk, then the call's pieces.
var toolCallEvents = []string{
	`{"id":"chatcmpl-tc","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}]}`,
	`{"id":"chatcmpl-tc","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}`,
	`{"id":"chatcmpl-tc","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]},"finish_reason":null}]}`,
	`{"id":"chatcmpl-tc","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
	`[DONE]`,
}

// TestResumeNotEligible: streams that carry tool calls, n > 1 or log
// probabilities end with the explicit error, and no continuation is sent; so does
// every stream of a virtual model without stream_resume.
func TestResumeNotEligible(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, resume, extra string
		mutate              func(*pb.ChatCompletionRequest)
		script              fakeupstream.Reply
	}{
		{name: "tool calls", resume: "    stream_resume: true\n", script: fakeupstream.Reply{Events: toolCallEvents, CutAfter: 3}},
		{name: "n=2", resume: "    stream_resume: true\n", extra: `,"n":2`,
			mutate: func(r *pb.ChatCompletionRequest) { n := int32(2); r.N = &n }},
		{name: "logprobs", resume: "    stream_resume: true\n", extra: `,"logprobs":true`,
			mutate: func(r *pb.ChatCompletionRequest) { lp := true; r.Logprobs = &lp }},
		{name: "stream_resume off", resume: ""},
		{name: "stream_resume false", resume: "    stream_resume: false\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			script := tc.script
			if script.CutAfter == 0 {
				script = cut
			}
			s := resumeGateway(t, tc.resume, "backup/gpt-4o-mini")
			s.g.up.Script(script, script) // one for REST, one for gRPC
			// REST: the in-band error, no [DONE].
			_, done, incomplete := sseText(t, restEvents(t, s.g, "resumed", tc.extra))
			require.False(t, done)
			require.True(t, incomplete)
			// gRPC: an error status.
			_, err := grpcStreamTextStrict(t, s.g, tc.mutate)
			require.Error(t, err)
			require.NotEqual(t, codes.OK, status.Code(err))
			require.Zero(t, s.backup.Count(), "no continuation was sent")
		})
	}
}

// TestResumePrefillRejected: a target that refuses the continuation is passed
// over for the one after it; with none left, the stream ends with the explicit
// error, never as complete.
func TestResumePrefillRejected(t *testing.T) {
	t.Parallel()
	t.Run("next target continues", func(t *testing.T) {
		t.Parallel()
		s := resumeGateway(t, "    stream_resume: true\n", "picky/gpt-4o-mini", "backup/gpt-4o-mini")
		s.g.up.Script(cut)
		before := scrape(t, s.g)
		text, done, incomplete := sseText(t, restEvents(t, s.g, "resumed", ""))
		require.True(t, done)
		require.False(t, incomplete)
		require.Equal(t, resumeFull, text)
		require.Equal(t, 1, s.picky.Count(), "picky was asked once and refused")
		requireContinuation(t, s.backup)
		after := scrape(t, s.g)
		require.Equal(t, 1.0, delta(before, after, key("switchyard_stream_resumes_total",
			"from", "up/gpt-4o", "to", "picky/gpt-4o-mini", "outcome", "rejected")))
		require.Equal(t, 1.0, delta(before, after, key("switchyard_stream_resumes_total",
			"from", "up/gpt-4o", "to", "backup/gpt-4o-mini", "outcome", "spliced")))

		s.g.up.Script(cut)
		got, err := grpcStreamTextStrict(t, s.g, nil)
		require.NoError(t, err)
		require.Equal(t, resumeFull, got)
	})
	t.Run("none left: explicit error", func(t *testing.T) {
		t.Parallel()
		s := resumeGateway(t, "    stream_resume: true\n", "picky/gpt-4o-mini")
		s.g.up.Script(cut)
		text, done, incomplete := sseText(t, restEvents(t, s.g, "resumed", ""))
		require.False(t, done)
		require.True(t, incomplete, "a truncated answer is never called complete")
		require.Equal(t, resumePartial, text)
		require.Equal(t, 1, s.picky.Count())

		s.g.up.Script(cut)
		got, err := grpcStreamTextStrict(t, s.g, nil)
		require.Error(t, err)
		require.Equal(t, resumePartial, got)
		require.Equal(t, 2, s.picky.Count())
	})
}

// grpcStreamTextStrict reads the virtual model "resumed" over gRPC: its text and
// final error.
func grpcStreamTextStrict(t *testing.T, g *gateway, mutate func(*pb.ChatCompletionRequest)) (string, error) {
	t.Helper()
	text, err, _ := grpcStreamText(t, g, "resumed", mutate)
	return text, err
}

// brokenAfterTwoWords is the primary's stream up to "one two ", then tail.
func brokenAfterTwoWords(tail ...string) []string {
	head := `{"id":"chatcmpl-fake2","object":"chat.completion.chunk","created":1769092764,"model":"gpt-4o","choices":[{"index":0,`
	return append([]string{
		head + `"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		head + `"delta":{"content":"one "},"finish_reason":null}]}`,
		head + `"delta":{"content":"two "},"finish_reason":null}]}`,
	}, tail...)
}

// TestResumeEveryBreak: a cut, a stall past stream_idle_timeout, a malformed
// chunk and an in-band error after the first byte are each resumed, on both
// surfaces.
func TestResumeEveryBreak(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		reply fakeupstream.Reply
	}{
		{"cut", cut},
		{"stall", fakeupstream.Reply{Text: resumeFull, StallAfter: 3, Stall: time.Minute}},
		{"malformed chunk", fakeupstream.Reply{Events: brokenAfterTwoWords(`{"id":"chatcmpl-fake2","choices":[{"index":0,"delta":{"content":`, `[DONE]`)}},
		{"in-band error", fakeupstream.Reply{Events: brokenAfterTwoWords(`{"error":{"message":"The server had an error","type":"server_error"}}`)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := resumeGatewayWith(t, "  stream_idle_timeout: 300ms\n", "    stream_resume: true\n", "backup/gpt-4o-mini")
			s.g.up.Script(tc.reply, tc.reply)
			text, done, incomplete := sseText(t, restEvents(t, s.g, "resumed", ""))
			require.True(t, done, "REST: complete")
			require.False(t, incomplete)
			require.Equal(t, resumeFull, text)
			requireContinuation(t, s.backup)
			got, err := grpcStreamTextStrict(t, s.g, nil)
			require.NoError(t, err, "gRPC: complete")
			require.Equal(t, resumeFull, got)
		})
	}
}

// TestNodeSDKResume runs e2e/node_resume with node's test runner: the Node SDK's
// stream helper and raw iteration over a resumed stream.
func TestNodeSDKResume(t *testing.T) {
	t.Parallel()
	_, err := os.Stat("../node_modules/openai/package.json")
	require.NoError(t, err, "the Node OpenAI SDK is missing: run the tests through `make test` (it runs npm ci)")
	s := resumeGateway(t, "    stream_resume: true\n", "backup/gpt-4o-mini")
	s.g.up.Script(cut, cut)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "--test", "--test-reporter=spec", "node_resume/")
	cmd.Env = append(os.Environ(), "SWITCHYARD_BASE_URL="+s.g.base)
	out, err := cmd.CombinedOutput()
	t.Logf("node --test:\n%s", out)
	require.NoError(t, err, "the Node SDK resume suite failed")
	require.Equal(t, 2, s.backup.Count(), "both streams were continued on the backup")
}

// TestResumeAdminAPI: stream_resume set through the admin API is shown back as
// written, resumes streams, and is checked.
func TestResumeAdminAPI(t *testing.T) {
	t.Parallel()
	s := resumeGateway(t, "", "backup/gpt-4o-mini")
	admin := adminpb.NewAdminServiceClient(s.g.conn)
	ctx := context.Background()
	block, err := structpb.NewValue(map[string]any{"max_resumes": 2})
	require.NoError(t, err)
	vm := &adminpb.VirtualModel{Source: "resumed-api", StreamResume: block, Targets: []*adminpb.VirtualModelTarget{
		{Model: "up/gpt-4o"}, {Model: "backup/gpt-4o-mini"}}}
	_, err = admin.UpsertVirtualModel(ctx, &adminpb.UpsertVirtualModelRequest{VirtualModel: vm})
	require.NoError(t, err)
	got, err := admin.GetVirtualModel(ctx, &adminpb.GetVirtualModelRequest{Source: "resumed-api"})
	require.NoError(t, err)
	require.Equal(t, 2.0, got.GetVirtualModel().GetStreamResume().GetStructValue().GetFields()["max_resumes"].GetNumberValue())

	s.g.up.Script(cut)
	text, done, incomplete := sseText(t, restEvents(t, s.g, "resumed-api", ""))
	require.True(t, done)
	require.False(t, incomplete)
	require.Equal(t, resumeFull, text)
	requireContinuation(t, s.backup)

	for _, bad := range []*structpb.Value{structpb.NewNumberValue(1), mustValue(t, map[string]any{"max_resumes": 0}),
		mustValue(t, map[string]any{"tries": 1})} {
		vm.StreamResume = bad
		_, err = admin.UpsertVirtualModel(ctx, &adminpb.UpsertVirtualModelRequest{VirtualModel: vm})
		require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", bad)
	}
}

func mustValue(t *testing.T, v any) *structpb.Value {
	t.Helper()
	out, err := structpb.NewValue(v)
	require.NoError(t, err)
	return out
}

// TestResumeMaxResumes: a continuation that breaks too is continued again while
// max_resumes allows, and ends with the explicit error once it is spent.
func TestResumeMaxResumes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		resume   string
		complete bool
	}{
		{"    stream_resume: {max_resumes: 2}\n", true},
		{"    stream_resume: {max_resumes: 1}\n", false},
	} {
		t.Run(strings.TrimSpace(tc.resume), func(t *testing.T) {
			t.Parallel()
			s := resumeGateway(t, tc.resume, "picky/gpt-4o-mini", "backup/gpt-4o-mini")
			s.g.up.Script(cut)
			// picky continues with "three " and cuts too; backup ends with "four".
			s.picky.SetDefault(fakeupstream.Reply{Text: resumeRest, CutAfter: 2})
			s.backup.SetDefault(fakeupstream.Reply{Text: "four"})
			text, done, incomplete := sseText(t, restEvents(t, s.g, "resumed", ""))
			require.Equal(t, tc.complete, done)
			require.Equal(t, !tc.complete, incomplete)
			if !tc.complete {
				require.Equal(t, "one two three ", text)
				require.Zero(t, s.backup.Count(), "max_resumes spent")
				return
			}
			require.Equal(t, resumeFull, text)
			msgs := s.backup.Requests()[0].JSON()["messages"].([]any)
			require.Equal(t, map[string]any{"role": "assistant", "content": "one two three "}, msgs[len(msgs)-1],
				"the second continuation carries everything sent so far")
		})
	}
}

// A primary retried before its first byte (a 503), then cut after it, is
// resumed on the chain's next target: the retry opened the same target again,
// which counted as a second target tried and left nothing to resume on.
func TestResumeAfterARetriedPrimary(t *testing.T) {
	t.Parallel()
	s := resumeGatewayYAML(t, "", "resilience:\n  retry:\n    initial_backoff: 1ms\n    max_backoff: 10ms\n",
		"    stream_resume: true\n", "backup/gpt-4o-mini")
	s.g.up.Script(fakeupstream.Reply{Status: 503}, cut)
	text, done, incomplete := sseText(t, restEvents(t, s.g, "resumed", ""))
	require.False(t, incomplete, "the backup continued it (backup requests: %d)", s.backup.Count())
	require.True(t, done)
	require.Equal(t, resumeFull, text)
}

// A client that leaves while its broken stream is being continued (the next
// target slow to answer) is a client leaving: Canceled on its request line,
// and no "resume refused" warning (no target refused anything); before, it
// was the cut's 502 stream_incomplete.
func TestALeaveDuringAResumeIsTheClients(t *testing.T) {
	t.Parallel()
	s := resumeGateway(t, "    stream_resume: true\n", "backup/gpt-4o-mini")
	s.backup.SetDefault(fakeupstream.Reply{Text: resumeRest, Delay: 10 * time.Second})
	s.g.up.Script(cut)
	ctx, cancel := context.WithCancel(context.Background())
	req := grpcReq()
	req.Model = "resumed"
	st, err := pb.NewChatServiceClient(s.g.conn).StreamChatCompletion(ctx, req)
	require.NoError(t, err)
	_, err = st.Recv()
	require.NoError(t, err)
	require.Eventually(t, func() bool { return s.backup.Count() == 1 }, 5*time.Second, 10*time.Millisecond, "the continuation is opening")
	cancel()
	require.Eventually(t, func() bool { return strings.Contains(s.g.logs.String(), `"msg":"request"`) }, 5*time.Second, 10*time.Millisecond)
	logs := s.g.logs.String()
	require.Contains(t, lineWith(logs, `"msg":"request"`), `"code":"Canceled"`)
	require.NotContains(t, logs, "stream resume refused")
}
