package e2e

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/fakeupstream"
)

func TestKeyRPMLimit(t *testing.T) {
	t.Parallel()
	g := start(t, keysYAML)
	_, secret := createKey(t, g, `{"name":"svc","models":["*"],"limits":{"rpm":3}}`)
	c := sdk(g, secret)
	for want := 2; want >= 0; want-- {
		var resp *http.Response
		_, err := c.Chat.Completions.New(context.Background(), userMsg("hi"), option.WithResponseInto(&resp))
		require.NoError(t, err)
		require.Equal(t, "3", resp.Header.Get("x-ratelimit-limit-requests"))
		require.Equal(t, strconv.Itoa(want), resp.Header.Get("x-ratelimit-remaining-requests"))
		require.NotEmpty(t, resp.Header.Get("x-ratelimit-reset-requests"))
		require.Empty(t, resp.Header.Get("x-ratelimit-limit-tokens"), "no tpm limit, no tokens headers")
	}
	calls := g.up.Count()
	_, err := c.Chat.Completions.New(context.Background(), userMsg("hi"))
	e := sdkError(t, err)
	require.Equal(t, http.StatusTooManyRequests, e.StatusCode)
	require.Equal(t, "rate_limit_exceeded", e.Code)
	require.Equal(t, "requests", e.Type)
	require.Contains(t, e.Message, "requests per min (RPM): limit 3")
	h := e.Response.Header
	ms, err := strconv.Atoi(h.Get("retry-after-ms"))
	require.NoError(t, err, "retry-after-ms: %q", h.Get("retry-after-ms"))
	require.InDelta(t, 20000, ms, 1000, "one request comes back every 20s at 3/min")
	require.Equal(t, "20", h.Get("Retry-After"))
	require.Equal(t, "3", h.Get("x-ratelimit-limit-requests"))
	require.Equal(t, "0", h.Get("x-ratelimit-remaining-requests"))
	reset, err := time.ParseDuration(h.Get("x-ratelimit-reset-requests"))
	require.NoError(t, err)
	require.InDelta(t, float64(time.Minute), float64(reset), float64(time.Second))
	require.Equal(t, calls, g.up.Count(), "a refused call reaches no upstream")

	// gRPC: ResourceExhausted with RetryInfo, and the same headers as metadata.
	var hdr metadata.MD
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+secret)
	_, err = pb.NewChatServiceClient(g.conn).CreateChatCompletion(ctx, &pb.ChatCompletionRequest{Model: "up/gpt-4o",
		Messages: []*pb.ChatMessage{{Role: "user", Content: structpb.NewStringValue("hi")}}}, grpc.Header(&hdr))
	st := status.Convert(err)
	require.Equal(t, codes.ResourceExhausted, st.Code(), "%v", err)
	var retry *errdetails.RetryInfo
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			retry = ri
		}
	}
	require.NotNil(t, retry, "RetryInfo detail")
	require.InDelta(t, 20, retry.GetRetryDelay().AsDuration().Seconds(), 1)
	require.Equal(t, []string{"0"}, hdr.Get("x-ratelimit-remaining-requests"))

	// The master key is not limited.
	_, err = sdk(g, "sk-master").Chat.Completions.New(context.Background(), userMsg("hi"))
	require.NoError(t, err)
}

// The estimate is charged at admission and corrected by the real usage (21
// tokens here) when the answer ends.
func TestKeyTPMLimit(t *testing.T) {
	t.Parallel()
	g := start(t, keysYAML)
	_, secret := createKey(t, g, `{"name":"svc","models":["*"],"limits":{"tpm":200}}`)
	c := sdk(g, secret)
	ask := func() (*http.Response, error) {
		p := userMsg("hi")
		p.MaxTokens = openai.Int(160) // estimate ≈ 165-175 (bytes/4 + max_tokens): the first call leaves < 40 until corrected
		var resp *http.Response
		_, err := c.Chat.Completions.New(context.Background(), p, option.WithResponseInto(&resp))
		return resp, err
	}
	resp, err := ask()
	require.NoError(t, err)
	require.Equal(t, "200", resp.Header.Get("x-ratelimit-limit-tokens"))
	left, _ := strconv.Atoi(resp.Header.Get("x-ratelimit-remaining-tokens"))
	require.Less(t, left, 40, "the estimate was charged")
	_, err = ask()
	require.NoError(t, err, "the first call's correction (21 used of ~170) gave the room back")
	_, err = ask()
	e := sdkError(t, err)
	require.Equal(t, http.StatusTooManyRequests, e.StatusCode)
	require.Equal(t, "tokens", e.Type)
	require.Equal(t, "rate_limit_exceeded", e.Code)
	require.NotEmpty(t, e.Response.Header.Get("x-ratelimit-reset-tokens"))
	require.NotEmpty(t, e.Response.Header.Get("retry-after-ms"))
	require.Equal(t, 2, g.up.Count())
}

func TestKeyConcurrencyLimit(t *testing.T) {
	t.Parallel()
	g := start(t, keysYAML)
	_, secret := createKey(t, g, `{"name":"svc","models":["*"],"limits":{"max_concurrency":1}}`)
	c := sdk(g, secret)
	waitCalls := func(n int) {
		require.Eventually(t, func() bool { return g.up.Count() >= n }, 5*time.Second, 5*time.Millisecond)
	}

	// One call in flight holds the only slot.
	g.up.Script(fakeupstream.Reply{Delay: 300 * time.Millisecond})
	done := make(chan error, 1)
	go func() {
		_, err := c.Chat.Completions.New(context.Background(), userMsg("slow"))
		done <- err
	}()
	waitCalls(1)
	_, err := c.Chat.Completions.New(context.Background(), userMsg("hi"))
	e := sdkError(t, err)
	require.Equal(t, http.StatusTooManyRequests, e.StatusCode)
	require.Equal(t, "requests", e.Type)
	require.Contains(t, e.Message, "concurrent")
	require.NoError(t, <-done)
	_, err = c.Chat.Completions.New(context.Background(), userMsg("hi"))
	require.NoError(t, err, "the ended call freed its slot")

	// A client that leaves frees its slot too.
	g.up.Script(fakeupstream.Reply{HeadersOnly: true})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		st := c.Chat.Completions.NewStreaming(ctx, userMsg("hang"))
		for st.Next() {
		}
		done <- st.Err()
	}()
	waitCalls(3)
	_, err = c.Chat.Completions.New(context.Background(), userMsg("hi"))
	require.Equal(t, http.StatusTooManyRequests, sdkError(t, err).StatusCode, "the stream holds the slot")
	cancel()
	<-done
	require.Eventually(t, func() bool {
		_, err := c.Chat.Completions.New(context.Background(), userMsg("hi"))
		return err == nil
	}, 5*time.Second, 10*time.Millisecond, "the cancelled stream freed its slot")
}

// providers.X.limits: a chain whose first target is at its account's limit goes
// to the next without calling it; every target saturated is a 429.
func TestTargetLimitsSkipToTheNextTarget(t *testing.T) {
	t.Parallel()
	backup := fakeupstream.New("gpt-4o-mini")
	t.Cleanup(backup.Close)
	g := start(t, "", withProviderYAML("    limits: {rpm: 1}\n"), withYAML("  backup:\n    type: openai\n    base_url: "+backup.URL+"\n"+
		"    limits:\n      models:\n        gpt-4o-mini: {rpm: 1}\n"+
		"virtual_models:\n  - source: chain\n    targets: [{model: up/gpt-4o}, {model: backup/gpt-4o-mini}]\n"))
	c := sdk(g, "k")
	p := userMsg("hi")
	p.Model = "chain"
	var resp *http.Response
	_, err := c.Chat.Completions.New(context.Background(), p, option.WithResponseInto(&resp))
	require.NoError(t, err)
	require.Equal(t, "up/gpt-4o", resp.Header.Get("X-Switchyard-Target"))
	_, err = c.Chat.Completions.New(context.Background(), p, option.WithResponseInto(&resp))
	require.NoError(t, err)
	require.Equal(t, "backup/gpt-4o-mini", resp.Header.Get("X-Switchyard-Target"))
	require.Equal(t, 1, g.up.Count(), "the saturated target was skipped without an upstream call")
	require.Equal(t, 1, backup.Count())

	_, err = c.Chat.Completions.New(context.Background(), p)
	e := sdkError(t, err)
	require.Equal(t, http.StatusTooManyRequests, e.StatusCode)
	require.Equal(t, "rate_limit_exceeded", e.Code)
	require.NotEmpty(t, e.Response.Header.Get("retry-after-ms"))
	require.Equal(t, 1, g.up.Count())
	require.Equal(t, 1, backup.Count(), "no upstream call when every target is saturated")

	// The account limit covers all of up's models; backup's is per model.
	p.Model = "up/gpt-4o-mini"
	_, err = c.Chat.Completions.New(context.Background(), p)
	require.Equal(t, http.StatusTooManyRequests, sdkError(t, err).StatusCode)
}
