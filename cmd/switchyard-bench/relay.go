package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
)

// serveRelay is the gRPC floor: a grpc-go server, with grpc-go's defaults, that
// carries each call's message bytes as they arrived to the upstream and answers
// with messages encoded once at start, one per upstream answer or SSE event. It
// decodes and encodes nothing per call: what grpc-go's transport and the
// upstream hop cost a gRPC caller before any gateway work. (It sends protobuf,
// not JSON, upstream; the bench's upstream reads a body and answers canned, a
// stream when the query says so.)
func serveRelay(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("relay", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	upstream := fs.String("upstream", "", "upstream base, e.g. http://127.0.0.1:1234")
	if err := fs.Parse(args); err != nil {
		return err
	}
	tr := &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 256, IdleConnTimeout: 90 * time.Second, Protocols: new(http.Protocols)}
	tr.Protocols.SetHTTP1(true)
	r := &relay{client: &http.Client{Transport: tr}, url: *upstream + "/v1/chat/completions"}
	var err error
	if r.answer, err = proto.Marshal(relayAnswer()); err != nil {
		return err
	}
	if r.chunk, err = proto.Marshal(relayChunk()); err != nil {
		return err
	}
	lis, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	gs := grpc.NewServer(grpc.ForceServerCodecV2(rawCodec{}))
	gs.RegisterService(&grpc.ServiceDesc{
		ServiceName: "switchyard.v1.ChatService",
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{MethodName: "CreateChatCompletion",
			Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
				return r.unary(ctx, dec)
			}}},
		Streams: []grpc.StreamDesc{{StreamName: "StreamChatCompletion", ServerStreams: true,
			Handler: func(_ any, st grpc.ServerStream) error { return r.stream(st) }}},
	}, nil)
	fmt.Printf("listening grpc=%s\n", lis.Addr())
	go func() { <-ctx.Done(); gs.Stop() }()
	return gs.Serve(lis)
}

type relay struct {
	client        *http.Client
	url           string
	answer, chunk []byte // encoded once
}

// post sends the message's bytes, kept from the frames they came in, upstream.
func (r *relay) post(ctx context.Context, msg mem.BufferSlice, stream bool) (*http.Response, error) {
	bufs := make(net.Buffers, 0, len(msg))
	for _, b := range msg {
		bufs = append(bufs, b.ReadOnlyData())
	}
	url := r.url
	if stream {
		url += "?stream=true"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, &bufs)
	if err != nil {
		return nil, err
	}
	req.ContentLength = int64(msg.Len())
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("upstream: %s", resp.Status)
	}
	return resp, nil
}

// The message's buffers go back to grpc-go's pool only once the upstream has
// answered in full (it reads the whole body first): on any error the transport
// may still be reading them, and they are left to the collector instead.

func (r *relay) unary(ctx context.Context, dec func(any) error) (any, error) {
	var msg mem.BufferSlice
	if err := dec(&msg); err != nil {
		return nil, err
	}
	resp, err := r.post(ctx, msg, false)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return nil, err
	}
	msg.Free()
	return &r.answer, nil
}

func (r *relay) stream(st grpc.ServerStream) error {
	var msg mem.BufferSlice
	if err := st.RecvMsg(&msg); err != nil {
		return err
	}
	resp, err := r.post(st.Context(), msg, true)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, io.EOF) {
			msg.Free()
			return nil
		}
		if err != nil {
			return err
		}
		if bytes.HasPrefix(line, []byte("data: ")) && !bytes.HasPrefix(line, []byte("data: [DONE]")) {
			if err := st.SendMsg(&r.chunk); err != nil {
				return err
			}
		}
	}
}

// rawCodec carries messages as bytes: a call's message is the frames' own
// buffers (referenced, not copied), an answer is *[]byte.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("relay: cannot send %T", v)
	}
	return mem.BufferSlice{mem.SliceBuffer(*b)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(*mem.BufferSlice)
	if !ok {
		return fmt.Errorf("relay: cannot receive into %T", v)
	}
	m.Free() // a second message of a call (grpc-go then refuses the call)
	data.Ref()
	*m = data
	return nil
}

// relayAnswer is completionBody as the message Switchyard would answer with.
func relayAnswer() *pb.ChatCompletion {
	stop := "stop"
	return &pb.ChatCompletion{Id: "chatcmpl-bench", Object: "chat.completion", Created: 1769092764, Model: "gpt-4o",
		Choices: []*pb.Choice{{Message: &pb.ChatMessage{Role: "assistant",
			Content: structpb.NewStringValue("Hello, World! This is a benchmark answer.")}, FinishReason: &stop}},
		Usage: &pb.Usage{PromptTokens: 17, CompletionTokens: 9, TotalTokens: 26}}
}

// relayChunk is one of streamBody's events as a message.
func relayChunk() *pb.ChatCompletionChunk {
	word := "World! "
	return &pb.ChatCompletionChunk{Id: "chatcmpl-bench", Object: "chat.completion.chunk", Created: 1769092764, Model: "gpt-4o",
		Choices: []*pb.ChunkChoice{{Delta: &pb.ChatDelta{Content: &word}}}}
}
