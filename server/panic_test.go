package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/codec"
	"github.com/switchyard/switchyard/internal/testutil"
	"github.com/switchyard/switchyard/keys"
	"github.com/switchyard/switchyard/metrics"
	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/tracing"
)

// scriptedProvider answers as its script says: "ok" answers at once, "panic"
// panics (a provider's bug), "wait" waits for its context; "panic after backup"
// panics once the other side of a hedge has started. started hears each call.
type scriptedProvider struct {
	name    string
	script  string
	started chan string
	backup  <-chan string
}

func (p *scriptedProvider) Name() string                             { return p.name }
func (p *scriptedProvider) Models(context.Context) ([]string, error) { return []string{"m"}, nil }

func (p *scriptedProvider) act(ctx context.Context) {
	p.started <- p.name
	switch p.script {
	case "panic":
		panic(fmt.Sprintf("provider %s bug", p.name))
	case "panic after backup":
		<-p.backup
		panic(fmt.Sprintf("provider %s bug", p.name))
	case "wait":
		<-ctx.Done()
	}
}

func (p *scriptedProvider) Chat(ctx context.Context, _ *providers.Request) (*pb.ChatCompletion, error) {
	p.act(ctx)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return &pb.ChatCompletion{Id: "c", Object: "chat.completion", Model: "m", Choices: []*pb.Choice{{
		Message: &pb.ChatMessage{Role: "assistant", Content: structpb.NewStringValue("ok")}, FinishReason: proto.String("stop")}}}, nil
}

func (p *scriptedProvider) Stream(ctx context.Context, _ *providers.Request) (providers.Stream, error) {
	p.act(ctx)
	return nil, ctx.Err()
}

// A provider that panics ends its own call with Internal (REST 500), logged,
// measured and released like any other call's end, and nothing more: not the
// process (a hedged attempt runs in a goroutine of its own, whose panic no
// interceptor would catch), not the next call. Hedged calls too, whichever side
// panics and when, unary and streaming.
func TestAPanickingProviderEndsOnlyItsCall(t *testing.T) {
	cases := []struct {
		name           string
		primary, other string
		hedge          bool
		stream         bool
	}{
		{name: "unhedged", primary: "panic", other: "ok"},
		{name: "hedged, primary panics before hedge_after", primary: "panic", other: "wait", hedge: true},
		{name: "hedged, backup panics", primary: "wait", other: "panic", hedge: true},
		{name: "hedged, primary panics after the backup started", primary: "panic after backup", other: "wait", hedge: true},
		{name: "hedged stream, backup panics", primary: "wait", other: "panic", hedge: true, stream: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			started := make(chan string, 8)
			a := &scriptedProvider{name: "a", script: tc.primary, started: started}
			b := &scriptedProvider{name: "b", script: tc.other, started: started}
			backup := make(chan string, 1)
			a.backup = backup
			healthy := &scriptedProvider{name: "h", script: "ok", started: make(chan string, 8)}
			r := serve(t, func(c *Config) {
				rt := router.New(slog.New(slog.DiscardHandler), []router.Target{
					{Provider: a, Configured: []string{"m"}}, {Provider: b, Configured: []string{"m"}},
					{Provider: healthy, Configured: []string{"m"}}})
				vm := router.VirtualModel{Source: "vm", Strategy: router.StrategyFailover,
					Targets: []router.VirtualTarget{{Model: "a/m"}, {Model: "b/m"}}}
				if tc.hedge {
					vm.HedgeAfter = 20 * time.Millisecond
				}
				require.NoError(t, rt.SetVirtualModels([]router.VirtualModel{vm}))
				c.Router = rt
			})
			go func() { // tells a "panic after backup" primary that the backup started
				for name := range started {
					if name == "b" {
						backup <- name
						return
					}
				}
			}()

			conn := r.dialGRPC(t)
			ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer sk-master")
			client := pb.NewChatServiceClient(conn)
			req := &pb.ChatCompletionRequest{Model: "vm", Messages: []*pb.ChatMessage{{Role: "user", Content: structpb.NewStringValue("hi")}}}
			var err error
			if tc.stream {
				var st pb.ChatService_StreamChatCompletionClient
				st, err = client.StreamChatCompletion(ctx, req)
				if err == nil {
					_, err = st.Recv()
				}
			} else {
				_, err = client.CreateChatCompletion(ctx, req)
			}
			require.Equal(t, codes.Internal, status.Code(err), "%v", err)
			require.Equal(t, "internal error", status.Convert(err).Message(), "no panic text reaches the caller")

			line := logLine(t, r, "request", "code", "Internal")
			require.Equal(t, "vm", line["model"])
			require.Contains(t, r.logs.String(), `"msg":"panic in handler"`)
			if tc.hedge { // raised again in the request's goroutine, saying where it began
				require.Contains(t, r.logs.String(), `bug (while running a hedged attempt in its own goroutine)`)
			}
			r.srv.drain.mu.Lock()
			tracked := len(r.srv.drain.cancels)
			r.srv.drain.mu.Unlock()
			require.Zero(t, tracked, "the drainer still tracks the call")

			// The process serves on: the next call on both surfaces.
			_, err = client.CreateChatCompletion(ctx, &pb.ChatCompletionRequest{Model: "h/m",
				Messages: []*pb.ChatMessage{{Role: "user", Content: structpb.NewStringValue("hi")}}})
			require.NoError(t, err)
			rest := func(model string) (int, string) {
				body := `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}]}`
				hreq, _ := http.NewRequest(http.MethodPost, "http://"+r.http+"/v1/chat/completions", bytes.NewReader([]byte(body)))
				hreq.Header.Set("Authorization", "Bearer sk-master")
				resp, err := http.DefaultClient.Do(hreq)
				require.NoError(t, err)
				defer resp.Body.Close()
				out, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(out)
			}
			code, _ := rest("h/m")
			require.Equal(t, http.StatusOK, code)
			if tc.primary == "panic" { // on REST too
				code, out := rest("a/m")
				require.Equal(t, http.StatusInternalServerError, code)
				require.Contains(t, out, `"message":"internal error"`)
				require.NotContains(t, out, "bug")
			}
		})
	}
}

// A unary request is decoded before the chain runs, in a goroutine grpc-go
// does not recover: a decoder that panics (a bug, on some caller's bytes) must
// not end the process. Its panic is carried into the chain, which answers
// Internal, logs it with where it was raised, and writes the request line.
func TestADecoderThatPanicsEndsOnlyItsCall(t *testing.T) {
	logs := &testutil.LogBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	adm := &admissionStage{log: log, auth: authorizer{keys: Keys{Master: "sk-master"}}}
	unary, _ := interceptors(chain{log: log, m: metrics.New(), tracer: tracing.Noop().Tracer(tracing.Name), adm: adm, drain: newDrainer()})
	var create grpc.MethodDesc
	for _, m := range decodeErrorsAsInvalidArgument(&pb.ChatService_ServiceDesc, log).Methods {
		if m.MethodName == "CreateChatCompletion" {
			create = m
		}
	}
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(mdAuthorization, "Bearer sk-master"))
	ctx = grpc.NewContextWithServerTransportStream(ctx, &headerSink{})
	var err error
	require.NotPanics(t, func() {
		_, err = create.Handler(pb.UnimplementedChatServiceServer{}, ctx, func(any) error { panic("decoder bug") }, unary)
	})
	require.Equal(t, codes.Internal, status.Code(err))
	require.Equal(t, "internal error", status.Convert(err).Message())
	require.Contains(t, logs.String(), `"msg":"panic in handler"`)
	require.Contains(t, logs.String(), `decoder bug (while decoding a request)`)
	require.Contains(t, logs.String(), `"msg":"request"`)
	require.Contains(t, logs.String(), `"code":"Internal"`)
}

// The REST front decodes a body before the chain runs, where net/http would
// only reset the connection on a panic: decodeSafely makes a decoder's bug the
// caller's Internal error (a 500 with Switchyard's error body), logged.
func TestDecodeSafely(t *testing.T) {
	t.Parallel()
	logs := &testutil.LogBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	t.Run("a panic is an Internal error, logged", func(t *testing.T) {
		err := decodeSafely(log, "decoding a test body", func() error { panic("decoder bug") })
		require.Equal(t, codes.Internal, status.Code(err))
		require.Equal(t, "internal error", status.Convert(err).Message())
		require.Contains(t, logs.String(), `"method":"decoding a test body","panic":"decoder bug"`)
	})
	t.Run("a decoder's own error is returned as it is", func(t *testing.T) {
		want := fmt.Errorf("bad body")
		require.Equal(t, want, decodeSafely(log, "decoding", func() error { return want }))
	})
}

// A request whose decoding panicked is not admitted as the half-decoded thing
// it is (no model of it reported), and a caller refused before the handler (a
// bad key) still leaves the panic logged.
func TestADecoderPanicIsNeverLost(t *testing.T) {
	cases := []struct {
		name, key string
		want      codes.Code
	}{
		{"a good key: Internal, through the chain", "sk-master", codes.Internal},
		{"a bad key: Unauthenticated, the panic still logged", "sk-wrong", codes.Unauthenticated},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			logs := &testutil.LogBuffer{}
			log := slog.New(slog.NewJSONHandler(logs, nil))
			var create grpc.MethodDesc
			for _, m := range decodeErrorsAsInvalidArgument(&pb.ChatService_ServiceDesc, log).Methods {
				if m.MethodName == "CreateChatCompletion" {
					create = m
				}
			}
			adm := &admissionStage{log: log, auth: authorizer{keys: Keys{Master: "sk-master"}}}
			unary, _ := interceptors(chain{log: log, m: metrics.New(), tracer: tracing.Noop().Tracer(tracing.Name), adm: adm, drain: newDrainer()})
			ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(mdAuthorization, "Bearer "+tc.key))
			ctx = grpc.NewContextWithServerTransportStream(ctx, &headerSink{})
			_, err := create.Handler(pb.UnimplementedChatServiceServer{}, ctx, func(v any) error {
				v.(*codec.Capture).Msg.(*pb.ChatCompletionRequest).Model = "half-decoded"
				panic("decoder bug")
			}, unary)
			require.Equal(t, tc.want, status.Code(err))
			require.Contains(t, logs.String(), `decoder bug (while decoding a request)`)
			require.NotContains(t, logs.String(), "half-decoded", "no model of a half-decoded request is reported")
		})
	}
}

// A virtual key's request metrics count a panicked call as the Internal (5xx)
// it is answered with, not as the 200 its unset error would say.
func TestAPanickedCallCountsAsA5xxForItsKey(t *testing.T) {
	reg, s := newKeys(t, nil, keys.Spec{Name: "one", Models: []string{"*"}})
	m := metrics.New()
	log := slog.New(slog.DiscardHandler)
	adm := &admissionStage{log: log, auth: authorizer{keys: Keys{Master: "sk-master"}, virtual: reg}, keyM: metrics.NewKeyMetrics(m)}
	unary, _ := interceptors(chain{log: log, m: m, tracer: tracing.Noop().Tracer(tracing.Name), adm: adm, drain: newDrainer()})
	err := callWith(unary, s[0], func(context.Context, any) (any, error) { panic("handler bug") })
	require.Equal(t, codes.Internal, status.Code(err))
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Regexp(t, `switchyard_key_requests_total\{key="[^"]+",status_class="5xx"\} 1`, rec.Body.String())
	require.NotContains(t, rec.Body.String(), `status_class="2xx"`)
}
