// Command switchyard-bench measures what Switchyard costs on top of a bare reverse
// proxy. In one run it starts a fast fake OpenAI-compatible upstream, a bare
// httputil.ReverseProxy to it (the floor) and Switchyard to it, each server in its
// own process, drives each with a closed-loop load, and prints req/s, p50/p99
// latency, server CPU time per request (user+sys from /proc), peak RSS, and the
// ratios Switchyard / floor.
//
//	go run ./cmd/switchyard-bench -c 32 -d 10s
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "upstream":
			err = serveUpstream(ctx, os.Args[2:])
		case "proxy":
			err = serveProxy(ctx, os.Args[2:])
		case "relay":
			err = serveRelay(ctx, os.Args[2:])
		case "switchyard":
			err = serveSwitchyard(ctx, os.Args[2:])
		case "load":
			err = serveLoad(ctx, os.Args[2:])
		default:
			err = bench(ctx, os.Args[1:], os.Stdout)
		}
	} else {
		err = bench(ctx, nil, os.Stdout)
	}
	if err != nil && err != flag.ErrHelp {
		fmt.Fprintln(os.Stderr, "switchyard-bench:", err)
		os.Exit(1)
	}
}
