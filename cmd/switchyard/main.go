// Command switchyard runs the Switchyard gateway.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.LookupEnv)
	if code := exitCode(err); code != 0 {
		if !isUsage(err) {
			fmt.Fprintln(os.Stderr, "switchyard:", err)
		}
		stop()
		os.Exit(code)
	}
}
