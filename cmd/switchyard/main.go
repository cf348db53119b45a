// Command switchyard runs the Switchyard gateway.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

func main() {
	ctx, again, stop := signals()
	defer stop()
	err := run(ctx, again, os.Args[1:], os.Stdout, os.Stderr, os.LookupEnv)
	if code := exitCode(err); code != 0 {
		if !isUsage(err) {
			fmt.Fprintln(os.Stderr, "switchyard:", err)
		}
		stop()
		os.Exit(code)
	}
}

// signals ends ctx at the first SIGTERM or SIGINT and closes again at the second
// (which ends server.drain_delay early); stop stops listening (more calls do nothing).
func signals() (ctx context.Context, again <-chan struct{}, stop func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(context.Background())
	second, done := make(chan struct{}), make(chan struct{})
	go func() {
		for _, end := range []func(){cancel, func() { close(second) }} {
			select {
			case <-ch:
				end()
			case <-done:
				return
			}
		}
	}()
	var once sync.Once
	return ctx, second, func() { once.Do(func() { signal.Stop(ch); close(done); cancel() }) }
}
