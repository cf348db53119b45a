package e2e

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
)

// deepBody is a chat request whose unknown member "x" is nested depth arrays deep:
// 2*depth bytes of brackets.
func deepBody(depth int) string {
	return `{"model":"up/gpt-4o","messages":[{"role":"user","content":"hi"}],"x":` +
		strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`
}

// alive checks that the gateway still answers an ordinary request on both surfaces.
func alive(t *testing.T, g *gateway) {
	t.Helper()
	resp := post(t, g.base+"/chat/completions", chatBody+`}`, "Authorization", "Bearer sk-master")
	require.Equal(t, http.StatusOK, resp.StatusCode, "the gateway still serves")
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer sk-master")
	_, err := pb.NewChatServiceClient(g.conn).CreateChatCompletion(ctx, &pb.ChatCompletionRequest{Model: "up/gpt-4o",
		Messages: []*pb.ChatMessage{{Role: "user"}}})
	require.NoError(t, err)
}

// Hostile client input on the REST surface: every case gets a clear client error
// (never a 5xx, a hang or a crash), none reaches the upstream, and the gateway
// serves normally afterwards.
func TestHostileRESTInput(t *testing.T) {
	t.Parallel()
	g := start(t, keysYAML)
	url := g.base + "/chat/completions"
	key := []string{"Authorization", "Bearer sk-master"}
	cases := []struct {
		name   string
		body   string
		header []string
		status int
		msg    string // the error message contains this
	}{
		{"8 MB deep nesting without a key", deepBody(4_000_000), nil, 401, ""},
		{"8 MB deep nesting with a key", deepBody(4_000_000), key, 400, "nest"},
		{"deep nesting just past any limit", deepBody(100_000), key, 400, "nest"},
		{"deep nesting inside content", `{"model":"up/gpt-4o","messages":[{"role":"user","content":` +
			strings.Repeat(`[{"type":"text","text":`, 50_000) + `"a"` + strings.Repeat("}]", 50_000) + `}]}`, key, 400, ""},
		{"deep objects in an unknown member", `{"model":"up/gpt-4o","messages":[],"x":` +
			strings.Repeat(`{"a":`, 200_000) + `1` + strings.Repeat("}", 200_000) + `}`, key, 400, "nest"},
		{"deep stream request", strings.Replace(deepBody(100_000), `{"model"`, `{"stream":true,"model"`, 1), key, 400, "nest"},
		{"8 MB of tiny values", `{"model":"up/gpt-4o","messages":[],"x":[` + strings.Repeat("0,", 3_999_000) + `0]}`, key, 400, "more JSON values than"},
		{"huge number for an int", chatBody + `,"max_tokens":99999999999999999999999}`, key, 400, "max_tokens"},
		{"number beyond float64", chatBody + `,"temperature":1e999}`, key, 400, "temperature"},
		{"invalid UTF-8 in a member name", "{\"model\":\"up/gpt-4o\",\"\xff\xfe\":1,\"messages\":[{\"role\":\"user\",\"content\":\"\xc3(\"}]}", key, 200, ""},
		{"truncated body", chatBody, key, 400, ""},
		{"oversized body", chatBody + `,"user":"` + strings.Repeat("x", 9<<20) + `"}`, key, 413, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := g.up.Count()
			start := time.Now()
			resp := post(t, url, tc.body, tc.header...)
			elapsed := time.Since(start)
			require.Equal(t, tc.status, resp.StatusCode)
			// The bound is for hangs: under -race on a loaded 2-core machine the
			// 8 MB cases take up to ~13 s (0.2 s without the race detector).
			require.Less(t, elapsed, 45*time.Second, "answered, not hung")
			if tc.status != 200 {
				e := readError(t, resp)
				require.Contains(t, e.Error.Message+" "+deref(e.Error.Param), tc.msg)
				require.Equal(t, before, g.up.Count(), "bad input never reaches the upstream")
			}
		})
	}
	alive(t, g)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// rawCodec sends bytes as they are, so a test can put any protobuf on the wire.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *v.(*[]byte), nil }
func (rawCodec) Unmarshal(b []byte, v any) error {
	*v.(*[]byte) = append([]byte(nil), b...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// deepValue is a google.protobuf.Value holding a list nested depth deep (a
// ListValue's field 1 is a Value; a Value's field 6 is a ListValue), encoded in
// linear time: the lengths are worked out from the inside out, then every level's
// tag and length is written from the outside in, and the innermost value last.
func deepValue(depth int) []byte {
	inner := protowire.AppendBytes(protowire.AppendTag(nil, 3, protowire.BytesType), []byte("x")) // string_value
	type level struct{ valueLen, listLen int }
	levels := make([]level, depth)
	n := len(inner)
	for i := depth - 1; i >= 0; i-- {
		list := protowire.SizeTag(1) + protowire.SizeBytes(n) // ListValue{values: [inner]}
		levels[i] = level{valueLen: list, listLen: n}
		n = protowire.SizeTag(6) + protowire.SizeBytes(list) // Value{list_value: list}
	}
	out := make([]byte, 0, n)
	for _, l := range levels {
		out = protowire.AppendVarint(protowire.AppendTag(out, 6, protowire.BytesType), uint64(l.valueLen))
		out = protowire.AppendVarint(protowire.AppendTag(out, 1, protowire.BytesType), uint64(l.listLen))
	}
	return append(out, inner...)
}

// Hostile protobuf on the gRPC surface: a message content nested far deeper than
// the nesting limit is refused with InvalidArgument naming the limit, on the unary
// and the streaming call; one over gRPC's 4 MiB message limit with
// ResourceExhausted. Nothing reaches the upstream and the gateway lives.
func TestHostileGRPCInput(t *testing.T) {
	t.Parallel()
	g := start(t, keysYAML)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer sk-master")
	cases := []struct {
		depth int
		code  codes.Code
		msg   string
	}{
		{200, codes.InvalidArgument, "nested deeper than"},
		{100_000, codes.InvalidArgument, "nested deeper than"},
		{300_000, codes.InvalidArgument, "nested deeper than"},
		{1_000_000, codes.ResourceExhausted, "larger than max"},
	}
	for _, tc := range cases {
		// ChatCompletionRequest: model = 1, messages = 2; ChatMessage: role = 1, content = 2 (a Value).
		msg := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte("user"))
		msg = protowire.AppendBytes(protowire.AppendTag(msg, 2, protowire.BytesType), deepValue(tc.depth))
		req := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte("up/gpt-4o"))
		req = protowire.AppendBytes(protowire.AppendTag(req, 2, protowire.BytesType), msg)
		t.Run("unary depth "+strconv.Itoa(tc.depth), func(t *testing.T) {
			var out []byte
			err := g.conn.Invoke(ctx, "/switchyard.v1.ChatService/CreateChatCompletion", &req, &out,
				grpc.ForceCodec(rawCodec{}), grpc.MaxCallSendMsgSize(64<<20))
			require.Equal(t, tc.code, status.Code(err), "%v", err)
			require.Contains(t, status.Convert(err).Message(), tc.msg)
		})
		t.Run("stream depth "+strconv.Itoa(tc.depth), func(t *testing.T) {
			s, err := g.conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, "/switchyard.v1.ChatService/StreamChatCompletion",
				grpc.ForceCodec(rawCodec{}), grpc.MaxCallSendMsgSize(64<<20))
			require.NoError(t, err)
			require.NoError(t, s.SendMsg(&req))
			require.NoError(t, s.CloseSend())
			var out []byte
			err = s.RecvMsg(&out)
			require.Equal(t, tc.code, status.Code(err), "%v", err)
			require.Contains(t, status.Convert(err).Message(), tc.msg)
		})
	}
	t.Run("without a key", func(t *testing.T) {
		// The key is checked before a request's decode error is answered, on the
		// unary call (decoded before the chain runs) as on the stream.
		bad := [][]byte{{0x0a, 0xff}} // model: a length past the end
		msg := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), deepValue(200))
		bad = append(bad, protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), msg))
		for _, req := range bad {
			var out []byte
			err := g.conn.Invoke(context.Background(), "/switchyard.v1.ChatService/CreateChatCompletion", &req, &out,
				grpc.ForceCodec(rawCodec{}))
			require.Equal(t, codes.Unauthenticated, status.Code(err), "%v", err)
			s, err := g.conn.NewStream(context.Background(), &grpc.StreamDesc{ServerStreams: true},
				"/switchyard.v1.ChatService/StreamChatCompletion", grpc.ForceCodec(rawCodec{}))
			require.NoError(t, err)
			require.NoError(t, s.SendMsg(&req))
			require.NoError(t, s.CloseSend())
			require.Equal(t, codes.Unauthenticated, status.Code(s.RecvMsg(&out)))
		}
		require.Regexp(t, `"msg":"request".*"code":"Unauthenticated"`, g.logs.String(), "refusals get their request line")
	})
	require.Zero(t, g.up.Count())
	alive(t, g)
}

// Strings reach the upstream as encoding/json would read them: invalid UTF-8 and
// lone surrogates become U+FFFD, and nothing after them is lost.
func TestHostileStringsReachUpstreamIntact(t *testing.T) {
	t.Parallel()
	g := start(t, "")
	cases := []struct{ name, raw, want string }{
		{"lone high surrogate before an escape", `"\ud83d\u0041"`, "\uFFFDA"},
		{"lone low surrogate", `"a\udfffb"`, "a\uFFFDb"},
		{"high surrogate at the end", `"ab\ud800"`, "ab\uFFFD"},
		{"two high surrogates then a pair", `"\ud800\ud83d\ude00"`, "\uFFFD\U0001F600"},
		{"invalid UTF-8 byte", "\"a\xffb\"", "a\uFFFDb"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t, g.base+"/chat/completions", chatBody+`,"user":`+tc.raw+`,"x_vendor":`+tc.raw+`}`)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			reqs := g.up.Requests()
			body := reqs[len(reqs)-1].JSON()
			require.Equal(t, tc.want, body["user"], "a modelled member")
			require.Equal(t, tc.want, body["x_vendor"], "an unknown member passed through")
		})
	}
}

// The hand encoding above is what protobuf-go makes of a nested Value.
func TestDeepValueEncoding(t *testing.T) {
	want := structpb.NewStringValue("x")
	for range 5 {
		want = structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{want}})
	}
	got := &structpb.Value{}
	require.NoError(t, proto.Unmarshal(deepValue(5), got))
	require.True(t, proto.Equal(want, got))
}
