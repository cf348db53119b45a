package e2e

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/server"
)

// TestAGRPCConnectionHasItsBounds: a gRPC connection may hold at most
// server.MaxConcurrentStreams calls at once and a call's metadata at most
// server.MaxHeaderListSize, as the server's HTTP/2 SETTINGS tell every client
// before any key is checked (grpc-go's defaults are no bound and 16 MiB: one
// client that opened streams it never sent on held gigabytes).
func TestAGRPCConnectionHasItsBounds(t *testing.T) {
	t.Parallel()
	g := start(t, keysYAML)

	t.Run("the SETTINGS say so", func(t *testing.T) {
		nc, err := net.DialTimeout("tcp", g.app.GRPCAddr(), 5*time.Second)
		require.NoError(t, err)
		defer nc.Close()
		require.NoError(t, nc.SetDeadline(time.Now().Add(10*time.Second)))
		_, err = nc.Write([]byte(http2.ClientPreface))
		require.NoError(t, err)
		fr := http2.NewFramer(nc, nc)
		require.NoError(t, fr.WriteSettings())
		for {
			f, err := fr.ReadFrame()
			require.NoError(t, err)
			sf, ok := f.(*http2.SettingsFrame)
			if !ok || sf.IsAck() {
				continue
			}
			streams, ok := sf.Value(http2.SettingMaxConcurrentStreams)
			require.True(t, ok, "MAX_CONCURRENT_STREAMS is announced")
			require.EqualValues(t, server.MaxConcurrentStreams, streams)
			headers, ok := sf.Value(http2.SettingMaxHeaderListSize)
			require.True(t, ok, "MAX_HEADER_LIST_SIZE is announced")
			require.EqualValues(t, server.MaxHeaderListSize, headers)
			return
		}
	})

	t.Run("metadata past the bound is refused", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer sk-master", "x-pad", strings.Repeat("a", server.MaxHeaderListSize))
		_, err := pb.NewModelServiceClient(g.conn).ListModels(ctx, &pb.ListModelsRequest{})
		require.Error(t, err)
		require.NotEqual(t, codes.OK, status.Code(err))
		// An ordinary call on the same connection still works.
		ok := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer sk-master")
		_, err = pb.NewModelServiceClient(g.conn).ListModels(ok, &pb.ListModelsRequest{})
		require.NoError(t, err)
	})
	t.Run("a call without a good key is refused before its message", func(t *testing.T) {
		for _, key := range []string{"", "Bearer wrong"} {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if key != "" {
				ctx = metadata.AppendToOutgoingContext(ctx, "authorization", key)
			}
			// A unary method, whose message the chain would wait for before checking
			// the key: nothing is sent, and the refusal comes all the same.
			s, err := g.conn.NewStream(ctx, &grpc.StreamDesc{}, "/switchyard.v1.ChatService/CreateChatCompletion")
			require.NoError(t, err)
			var out pb.ChatCompletion
			err = s.RecvMsg(&out)
			require.Equal(t, codes.Unauthenticated, status.Code(err), "%q: %v", key, err)
			cancel()
		}
		require.Regexp(t, `"msg":"request".*"code":"Unauthenticated"`, g.logs.String(), "the refusal has its request line")

		// No stream to echo x-request-id on: the id is in the error's ErrorInfo,
		// the client's own or one made for it, as the request line names it.
		for _, sent := range []string{"review-123", "", strings.Repeat("x", 200)} {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if sent != "" {
				ctx = metadata.AppendToOutgoingContext(ctx, "x-request-id", sent)
			}
			_, err := pb.NewModelServiceClient(g.conn).ListModels(ctx, &pb.ListModelsRequest{})
			cancel()
			require.Equal(t, codes.Unauthenticated, status.Code(err))
			id := ""
			for _, d := range status.Convert(err).Details() {
				if info, ok := d.(*errdetails.ErrorInfo); ok {
					id = info.GetMetadata()["request_id"]
					require.Equal(t, "401", info.GetMetadata()["http_status"], "the ErrorInfo is the one the chain gives")
				}
			}
			require.NotEmpty(t, id)
			if sent != "" && len(sent) <= 128 {
				require.Equal(t, sent, id)
			}
			require.Contains(t, g.logs.String(), `"request_id":"`+id+`"`)
		}
	})

	t.Run("a call with a far deadline is refused by the chain", func(t *testing.T) {
		// grpc-go leaves a tap-refused stream's timer to the client's deadline, so a
		// call whose deadline is far goes to the chain, which refuses it as well.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Hour)
		defer cancel()
		_, err := pb.NewModelServiceClient(g.conn).ListModels(ctx, &pb.ListModelsRequest{})
		require.Equal(t, codes.Unauthenticated, status.Code(err), "%v", err)
	})
	alive(t, g)
}

// TestAModelNameWithAControlCharacterIsRefused: a provider/model name with a
// control character is 400 / InvalidArgument naming model, before any upstream
// call, on every surface (it reached the upstream, whose answer then failed as
// Internal on gRPC: grpc-go refused the x-switchyard-target header). A name
// outside ASCII is served, its target header %-escaped.
func TestAModelNameWithAControlCharacterIsRefused(t *testing.T) {
	t.Parallel()
	g := start(t, "")
	for _, model := range []string{"up/m\r1", "up/m\n1", "up/m\x001", "up/m\x7f1", "up/m\u00851"} {
		t.Run(strconv.Quote(model), func(t *testing.T) {
			before := g.up.Count()
			req := grpcReq()
			req.Model = model
			_, err := pb.NewChatServiceClient(g.conn).CreateChatCompletion(context.Background(), req)
			require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
			st, err := pb.NewChatServiceClient(g.conn).StreamChatCompletion(context.Background(), req)
			require.NoError(t, err)
			_, err = st.Recv()
			require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
			_, err = pb.NewEmbeddingServiceClient(g.conn).CreateEmbeddings(context.Background(), &pb.CreateEmbeddingsRequest{Model: model,
				Input: &pb.EmbeddingInput{Kind: &pb.EmbeddingInput_Text{Text: "a"}}})
			require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
			body, err := json.Marshal(map[string]any{"model": model, "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
			require.NoError(t, err)
			resp := post(t, g.base+"/chat/completions", string(body))
			require.Equal(t, http.StatusBadRequest, resp.StatusCode)
			require.Equal(t, before, g.up.Count(), "no upstream call")
		})
	}
	t.Run("a name outside ASCII", func(t *testing.T) {
		req := grpcReq()
		req.Model = "up/modèle-100%"
		var hdr metadata.MD
		_, err := pb.NewChatServiceClient(g.conn).CreateChatCompletion(context.Background(), req, grpc.Header(&hdr))
		require.NoError(t, err)
		require.Equal(t, []string{"up/mod%C3%A8le-100%25"}, hdr.Get("x-switchyard-target"))
	})
}
