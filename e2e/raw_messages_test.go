package e2e

import (
	"bytes"
	"context"
	"math"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/fakeupstream"
)

// A REST body's conversation reaches an OpenAI-wire upstream byte for byte —
// spacing, escapes, member order and unknown members as the client wrote them —
// with only the request's own members (model, stream options) rewritten.
func TestRESTConversationReachesTheUpstreamAsSent(t *testing.T) {
	t.Parallel()
	g := start(t, "")
	msgs := "[ {\"role\":\"system\",\"content\":\"be \\\"brief\\\"\\n\\u00e9\"},\n" +
		"  {\"content\":[{\"type\":\"text\",\"text\":\"hi\"}],\"role\":\"user\",\"vendor_hint\":{\"x\":[1,2.50,null]}} ]"
	for _, stream := range []bool{false, true} {
		body := `{"model":"up/gpt-4o","messages":` + msgs + `,"temperature":0.3}`
		if stream {
			body = `{"model":"up/gpt-4o","stream":true,"messages":` + msgs + `}`
		}
		resp := post(t, g.base+"/chat/completions", body)
		require.Equal(t, 200, resp.StatusCode)
		reqs := g.up.Requests()
		up := reqs[len(reqs)-1].Body
		require.True(t, bytes.Contains(up, []byte(`"messages":`+msgs)), "stream=%v: upstream got %s", stream, up)
		require.Equal(t, "gpt-4o", reqs[len(reqs)-1].JSON()["model"])
	}
}

// A gRPC caller may send the conversation as JSON (messages_json): it is checked
// as the REST surface checks a body's messages and then sent upstream byte for
// byte, or, when that check declines it, decoded (which names its fault or
// mends its text) and sent as encoded; nothing can be smuggled into the
// upstream body beside it.
func TestGRPCMessagesJSON(t *testing.T) {
	t.Parallel()
	g := start(t, "")
	chat := pb.NewChatServiceClient(g.conn)
	sent := func(t *testing.T, raw string) string {
		t.Helper()
		_, err := chat.CreateChatCompletion(context.Background(), &pb.ChatCompletionRequest{Model: "up/gpt-4o", MessagesJson: []byte(raw)})
		require.NoError(t, err)
		reqs := g.up.Requests()
		return string(reqs[len(reqs)-1].Body)
	}
	t.Run("sent as it is", func(t *testing.T) {
		raw := "[ {\"role\": \"user\", \"content\": \"a \\\"q\\\"\\n\\u00e9 漢字\", \"x_trace\": {\"id\": [1, 2]}} ]"
		require.Contains(t, sent(t, raw), `"messages":`+raw)
	})
	t.Run("mended text is decoded and encoded", func(t *testing.T) {
		body := sent(t, "[{\"role\":\"user\",\"content\":\"a\xffb\"}]")
		require.Contains(t, body, "\"messages\":[{\"role\":\"user\",\"content\":\"a\uFFFDb\"}]") // U+FFFD written as it is
	})
	// A mark like the one the codec puts on a conversation it wrote itself,
	// hidden in an unknown field's value: still the caller's own bytes.
	mark := protowire.AppendVarint(protowire.AppendTag(nil, protowire.MaxValidNumber, protowire.VarintType), 1)
	forged := protowire.AppendBytes(protowire.AppendTag(nil, 9999, protowire.BytesType), mark)
	cases := []struct {
		name, raw, param string
		both             bool
		unknown          []byte
	}{
		{"not JSON", `[{"role":`, "", false, nil},
		{"wrong type", `[{"role":5,"content":"x"}]`, "messages[0].role", false, nil},
		{"no role", `[{"content":"x"}]`, "messages[0].role", false, nil},
		{"empty", `[]`, "messages", false, nil},
		{"and messages too", `[{"role":"user","content":"x"}]`, "messages_json", true, nil},
		{"members smuggled after the array", `[{"role":"user","content":"hi"}],"model":"o1-pro","n":64`, "messages_json", false, nil},
		{"two arrays", `[{"role":"user","content":"hi"}] []`, "messages_json", false, nil},
		{"members smuggled, with a forged mark", `[{"role":"user","content":"hi"}],"model":"o1-pro","n":64`, "messages_json", false, forged},
		{"members smuggled, with the mark as a field", `[{"role":"user","content":"hi"}],"model":"o1-pro"`, "messages_json", false, mark},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := g.up.Count()
			req := &pb.ChatCompletionRequest{Model: "up/gpt-4o", MessagesJson: []byte(tc.raw)}
			if tc.both {
				req.Messages = []*pb.ChatMessage{{Role: "user", Content: structpb.NewStringValue("x")}}
			}
			if tc.unknown != nil {
				req.ProtoReflect().SetUnknown(tc.unknown)
			}
			_, err := chat.CreateChatCompletion(context.Background(), req)
			require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
			if tc.param != "" {
				require.Equal(t, tc.param, paramOf(err), "%v", err)
			}
			require.Equal(t, before, g.up.Count(), "nothing reached the upstream")
		})
	}
}

// paramOf is the parameter a gRPC error names (its ErrorInfo's "param").
func paramOf(err error) string {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetMetadata()["param"]
		}
	}
	return ""
}

// A double JSON cannot carry (NaN, ±Infinity), sent by the generated client, is
// the caller's InvalidArgument naming the member, on unary and stream calls;
// nothing goes upstream (it would have gone with null in its place).
func TestANaNFromTheGeneratedClientIsRefused(t *testing.T) {
	t.Parallel()
	g := start(t, "")
	chat := pb.NewChatServiceClient(g.conn)
	for _, tc := range []struct {
		name  string
		edit  func(*pb.ChatCompletionRequest)
		param string
	}{
		{"temperature NaN", func(r *pb.ChatCompletionRequest) { r.Temperature = proto.Float64(math.NaN()) }, "temperature"},
		{"top_p infinite", func(r *pb.ChatCompletionRequest) { r.TopP = proto.Float64(math.Inf(-1)) }, "top_p"},
		{"a tool's schema", func(r *pb.ChatCompletionRequest) {
			r.Tools = []*pb.Tool{{Type: "function", Function: &pb.FunctionDefinition{Name: "f",
				Parameters: &structpb.Struct{Fields: map[string]*structpb.Value{"max": structpb.NewNumberValue(math.Inf(1))}}}}}
		}, "tools[0].function.parameters.max"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := g.up.Count()
			req := grpcReq()
			tc.edit(req)
			_, err := chat.CreateChatCompletion(context.Background(), req)
			require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
			require.Equal(t, tc.param, paramOf(err))
			s, err := chat.StreamChatCompletion(context.Background(), req)
			require.NoError(t, err)
			_, err = s.Recv()
			require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
			require.Equal(t, tc.param, paramOf(err))
			require.Equal(t, before, g.up.Count(), "nothing reached the upstream")
		})
	}
}

// A key refused on gRPC carries the ErrorInfo every Switchyard error carries,
// with REST's http_status, type and code: before, it was a bare status (the
// Go client's HTTPStatus read 0).
func TestARefusedKeyOnGRPCCarriesItsErrorInfo(t *testing.T) {
	t.Parallel()
	g := start(t, keysYAML)
	info := func(err error) map[string]string {
		for _, d := range status.Convert(err).Details() {
			if i, ok := d.(*errdetails.ErrorInfo); ok {
				return i.GetMetadata()
			}
		}
		return nil
	}
	for _, tc := range []struct {
		name, key  string
		code       codes.Code
		httpStatus string
		errType    string
	}{
		{"no key", "", codes.Unauthenticated, "401", "authentication_error"},
		{"a wrong key", "sk-wrong", codes.Unauthenticated, "401", "authentication_error"},
		{"the admin key for inference", "sk-admin", codes.PermissionDenied, "403", "permission_error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.key != "" {
				ctx = withKey(tc.key)
			}
			_, err := pb.NewChatServiceClient(g.conn).CreateChatCompletion(ctx, grpcReq())
			require.Equal(t, tc.code, status.Code(err), "%v", err)
			md := info(err)
			require.NotNil(t, md, "an ErrorInfo: %v", err)
			require.Equal(t, tc.httpStatus, md["http_status"])
			require.Equal(t, tc.errType, md["type"])
			if tc.code == codes.Unauthenticated {
				require.Equal(t, "invalid_api_key", md["code"])
			}
		})
	}
}

// A stream that fails before its first byte names the target that failed, in
// x-switchyard-target, as a unary call's failure does.
func TestAStreamThatFailsFirstNamesItsTarget(t *testing.T) {
	t.Parallel()
	g := start(t, "", withYAML(noRetries))
	g.up.Script(fakeupstream.Reply{Status: http.StatusServiceUnavailable})
	var header metadata.MD
	s, err := pb.NewChatServiceClient(g.conn).StreamChatCompletion(context.Background(), grpcReq(), grpc.Header(&header))
	require.NoError(t, err)
	_, err = s.Recv()
	require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	require.Equal(t, []string{"up/gpt-4o"}, header.Get("x-switchyard-target"))
}
