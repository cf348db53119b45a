package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/app"
	"github.com/switchyard/switchyard/config"
)

// The upstream's canned answers, shaped like OpenAI's (see internal/fakeupstream/testdata).
const completionBody = `{"id":"chatcmpl-bench","object":"chat.completion","created":1769092737,"model":"gpt-4o",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"Hello, World! This is a benchmark answer.","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":17,"completion_tokens":9,"total_tokens":26,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},` +
	`"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},` +
	`"service_tier":"default","system_fingerprint":"fp_29330a9688"}`

func streamBody() string {
	head := `{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1769092764,"model":"gpt-4o","service_tier":"default","system_fingerprint":"fp_29330a9688",`
	var b strings.Builder
	b.WriteString("data: " + head + `"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]}` + "\n\n")
	for _, w := range strings.SplitAfter("Hello, World! This is a benchmark answer streamed word by word.", " ") {
		b.WriteString("data: " + head + `"choices":[{"index":0,"delta":{"content":"` + w + `"},"logprobs":null,"finish_reason":null}]}` + "\n\n")
	}
	b.WriteString("data: " + head + `"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}` + "\n\n")
	b.WriteString("data: " + head + `"choices":[],"usage":{"prompt_tokens":17,"completion_tokens":12,"total_tokens":29}}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

// serveUpstream is the fast fake upstream: canned answers, no recording.
func serveUpstream(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("upstream", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	certFile := fs.String("tls-cert", "", "serve HTTPS with this certificate (and -tls-key)")
	keyFile := fs.String("tls-key", "", "the certificate's key")
	h2 := fs.Bool("h2", false, "offer HTTP/2 over TLS (else HTTP/1.1 only)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	stream := streamBody()
	models := `{"object":"list","data":[{"id":"gpt-4o","object":"model","created":1686588896,"owned_by":"system"}]}`
	var h1, h2n atomic.Int64 // requests by protocol, reported at exit
	defer func() {
		fmt.Fprintf(os.Stderr, "upstream served %d HTTP/1.1 and %d HTTP/2 requests\n", h1.Load(), h2n.Load())
	}()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 {
			h2n.Add(1)
		} else {
			h1.Add(1)
		}
		body, _ := io.ReadAll(r.Body)
		switch {
		case r.URL.Path == "/v1/models":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, models)
		case strings.Contains(string(body), `"stream":true`) || r.URL.Query().Get("stream") == "true": // the query: the gRPC floor's
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, stream)
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, completionBody)
		}
	})
	srv := &http.Server{Handler: h, Protocols: new(http.Protocols)}
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetHTTP2(*h2) // over TLS only
	return serve(ctx, *addr, srv, *certFile, *keyFile)
}

// serveProxy is the floor: a bare reverse proxy that only forwards.
func serveProxy(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	upstream := fs.String("upstream", "", "upstream base, e.g. http://127.0.0.1:1234")
	if err := fs.Parse(args); err != nil {
		return err
	}
	u, err := url.Parse(*upstream)
	if err != nil {
		return err
	}
	p := httputil.NewSingleHostReverseProxy(u)
	// The same pool settings and protocol (HTTP/1.1) as Switchyard's provider client.
	tr := &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 256, IdleConnTimeout: 90 * time.Second, Protocols: new(http.Protocols)}
	tr.Protocols.SetHTTP1(true)
	p.Transport = tr
	p.FlushInterval = -1
	return serveOn(ctx, *addr, p)
}

// serveSwitchyard runs Switchyard with one provider "up" pointing at the upstream.
func serveSwitchyard(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("switchyard", flag.ContinueOnError)
	httpAddr := fs.String("http-addr", "127.0.0.1:0", "REST listen address")
	grpcAddr := fs.String("grpc-addr", "127.0.0.1:0", "gRPC listen address")
	upstream := fs.String("upstream", "", "upstream base, e.g. http://127.0.0.1:1234")
	ledger := fs.String("usage-store", "sqlite", "usage.store")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	memProfile := fs.String("memprofile", "", "write an allocation profile of the whole run to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *memProfile != "" {
		defer writeAllocs(*memProfile)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	cfg, err := config.Load("", func(k string) (string, bool) {
		if k == "OPENAI_API_KEY" {
			return "sk-bench", true
		}
		if k == "OPENAI_BASE_URL" {
			return *upstream + "/v1", true
		}
		return "", false
	})
	if err != nil {
		return err
	}
	cfg.Server.HTTPAddr, cfg.Server.GRPCAddr = *httpAddr, *grpcAddr
	dir, err := os.MkdirTemp("", "switchyard-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg.Server.DataDir = dir
	cfg.Usage.Store = *ledger
	a, err := app.Start(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	fmt.Printf("listening http=%s grpc=%s\n", a.HTTPAddr(), a.GRPCAddr())
	<-ctx.Done()
	return a.Shutdown(context.Background())
}

func serveOn(ctx context.Context, addr string, h http.Handler) error {
	return serve(ctx, addr, &http.Server{Handler: h}, "", "")
}

// serve runs srv on addr until ctx ends: HTTPS when given a certificate.
func serve(ctx context.Context, addr string, srv *http.Server, certFile, keyFile string) error {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	scheme := "http"
	if certFile != "" {
		scheme = "https"
	}
	fmt.Printf("listening %s=%s\n", scheme, lis.Addr())
	go func() { <-ctx.Done(); _ = srv.Close() }()
	if certFile != "" {
		err = srv.ServeTLS(lis, certFile, keyFile)
	} else {
		err = srv.Serve(lis)
	}
	if err != http.ErrServerClosed {
		return err
	}
	return nil
}

// writeAllocs writes the allocations made since the start (go tool pprof -sample_index=alloc_space).
func writeAllocs(path string) {
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "memprofile:", err)
		return
	}
	defer f.Close()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		fmt.Fprintln(os.Stderr, "memprofile:", err)
	}
}
