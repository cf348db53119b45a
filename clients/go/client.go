// Package switchyard is the Go client for Switchyard's gRPC API: chat (unary and
// streaming), models, and an admin client, over the generated stubs in gen/.
//
//	c, err := switchyard.Dial(ctx, "localhost:9090", switchyard.WithInsecure(), switchyard.WithKey(key))
//	resp, err := c.Chat(ctx, &pb.ChatCompletionRequest{Model: "sim-1", Messages: []*pb.ChatMessage{switchyard.User("hi")}})
//	for chunk, err := range c.Stream(ctx, req) { ... }
//
// Several replicas: Dial resolves the target through DNS (a bare "host:port" is
// "dns:///host:port") and spreads calls over every address it returns with the
// round_robin policy, re-resolving when a connection ends. Behind a Kubernetes
// headless service (clusterIP: None) the name resolves to every ready pod, so
// point Dial at "dns:///switchyard-headless.NAMESPACE.svc.cluster.local:9090"; the
// server's max_connection_age makes long-lived clients reconnect and pick up new
// pods. WithLoadBalancing("pick_first") keeps one connection instead.
package switchyard

import (
	"context"
	"crypto/tls"
	"io"
	"iter"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/protobuf/types/known/structpb"

	adminpb "github.com/switchyard/switchyard/gen/switchyard/admin/v1"
	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/codec"
)

// Client calls one Switchyard.
type Client struct {
	conn   *grpc.ClientConn
	chat   pb.ChatServiceClient
	models pb.ModelServiceClient
	// inference carries the key on chat and model calls.
	inference []grpc.CallOption
	// Admin administers breakers, virtual models and providers (needs the admin key).
	Admin *Admin
}

type options struct {
	key      string
	adminKey string
	tls      *tls.Config
	insecure bool
	dial     []grpc.DialOption
	balancer string
}

// DefaultLoadBalancing is the gRPC load-balancing policy Dial uses: one connection
// per resolved address, calls spread over the ready ones.
const DefaultLoadBalancing = "round_robin"

// WithLoadBalancing sets the gRPC load-balancing policy ("round_robin",
// "pick_first"); the default is DefaultLoadBalancing.
func WithLoadBalancing(policy string) Option { return func(o *options) { o.balancer = policy } }

// Option configures Dial.
type Option func(*options)

// WithKey sends key as "authorization: Bearer <key>" on every call (the master key
// for inference).
func WithKey(key string) Option { return func(o *options) { o.key = key } }

// WithAdminKey sends key on admin calls instead of the WithKey key.
func WithAdminKey(key string) Option { return func(o *options) { o.adminKey = key } }

// WithTLS uses TLS with cfg (the default is TLS with the system roots).
func WithTLS(cfg *tls.Config) Option { return func(o *options) { o.tls = cfg } }

// WithInsecure uses plaintext (local or in-cluster traffic only).
func WithInsecure() Option { return func(o *options) { o.insecure = true } }

// WithDialOptions adds raw gRPC dial options (e.g. a custom dialer for tests).
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(o *options) { o.dial = append(o.dial, opts...) }
}

// bearer is per-RPC credentials; it allows plaintext only when the client does.
type bearer struct {
	key    string
	secure bool
}

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.key}, nil
}

func (b bearer) RequireTransportSecurity() bool { return b.secure }

// Dial connects to target (host:port, or a gRPC target URI such as
// "dns:///name:port"; a bare host:port is resolved through DNS). Connections are
// made lazily; the first call reports an unreachable server.
func Dial(_ context.Context, target string, opts ...Option) (*Client, error) {
	o := options{balancer: DefaultLoadBalancing}
	for _, opt := range opts {
		opt(&o)
	}
	dial := []grpc.DialOption{
		grpc.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"` + o.balancer + `":{}}]}`),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
		// Switchyard's codec: the same protobuf bytes, encoded without reflection.
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.ForceCodecV2(codec.Codec{})),
	}
	if o.insecure {
		dial = append(dial, grpc.WithTransportCredentials(insecure.NewCredentials()))
	} else {
		cfg := o.tls
		if cfg == nil {
			cfg = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		dial = append(dial, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	}
	dial = append(dial, o.dial...)
	conn, err := grpc.NewClient(target, dial...)
	if err != nil {
		return nil, err
	}
	c := &Client{conn: conn, chat: pb.NewChatServiceClient(conn), models: pb.NewModelServiceClient(conn)}
	var inference, admin []grpc.CallOption
	if o.key != "" {
		inference = append(inference, grpc.PerRPCCredentials(bearer{key: o.key, secure: !o.insecure}))
	}
	adminKey := o.adminKey
	if adminKey == "" {
		adminKey = o.key
	}
	if adminKey != "" {
		admin = append(admin, grpc.PerRPCCredentials(bearer{key: adminKey, secure: !o.insecure}))
	}
	c.inference = inference
	c.Admin = &Admin{stub: adminpb.NewAdminServiceClient(conn), call: admin}
	return c, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// User is a user message with text content.
func User(text string) *pb.ChatMessage {
	return &pb.ChatMessage{Role: "user", Content: structpb.NewStringValue(text)}
}

// System is a system message with text content.
func System(text string) *pb.ChatMessage {
	return &pb.ChatMessage{Role: "system", Content: structpb.NewStringValue(text)}
}

// Text returns the first choice's text.
func Text(resp *pb.ChatCompletion) string {
	if len(resp.GetChoices()) == 0 {
		return ""
	}
	return resp.GetChoices()[0].GetMessage().GetContent().GetStringValue()
}

// Chat returns one complete chat completion.
func (c *Client) Chat(ctx context.Context, req *pb.ChatCompletionRequest, opts ...grpc.CallOption) (*pb.ChatCompletion, error) {
	return c.chat.CreateChatCompletion(ctx, req, append(c.inference, opts...)...)
}

// Stream returns the completion's chunks. The sequence ends after the final
// chunk; a stream that stops before it yields an error (IsStreamIncomplete) as its
// last element, never a silent end. Stop ranging early to cancel the call.
func (c *Client) Stream(ctx context.Context, req *pb.ChatCompletionRequest, opts ...grpc.CallOption) iter.Seq2[*pb.ChatCompletionChunk, error] {
	return func(yield func(*pb.ChatCompletionChunk, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		st, err := c.chat.StreamChatCompletion(ctx, req, append(c.inference, opts...)...)
		if err != nil {
			yield(nil, err)
			return
		}
		for {
			chunk, err := st.Recv()
			if err == io.EOF {
				return
			}
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(chunk, nil) {
				return
			}
		}
	}
}

// Models lists the routable models.
func (c *Client) Models(ctx context.Context) ([]*pb.Model, error) {
	resp, err := c.models.ListModels(ctx, &pb.ListModelsRequest{}, c.inference...)
	if err != nil {
		return nil, err
	}
	return resp.GetData(), nil
}
