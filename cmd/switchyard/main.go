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
	ctx, sig, stop := signals()
	defer stop()
	err := run(ctx, sig, os.Args[1:], os.Stdout, os.Stderr, os.LookupEnv)
	if code := exitCode(err); code != 0 {
		if !isUsage(err) {
			fmt.Fprintln(os.Stderr, "switchyard:", err)
		}
		stop()
		os.Exit(code)
	}
}

// signalled is what the signals after the first say to run.
type signalled struct {
	// again closes at the second SIGTERM or SIGINT, which ends server.drain_delay early.
	again <-chan struct{}
	// hup gets each SIGHUP, which Switchyard answers with a log line and serves on:
	// an operator's reload (systemd's ExecReload, a habit from other servers) must
	// not end it undrained, which is what SIGHUP's default does.
	hup <-chan struct{}
}

// signals ends ctx at the first SIGTERM or SIGINT and says what the later ones
// are (signalled); stop stops listening (more calls do nothing).
func signals() (ctx context.Context, sig signalled, stop func()) {
	ch, hupCh := make(chan os.Signal, 2), make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	signal.Notify(hupCh, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(context.Background())
	second, hup, done := make(chan struct{}), make(chan struct{}, 1), make(chan struct{})
	go func() {
		ends := []func(){cancel, func() { close(second) }}
		for {
			select {
			case <-ch:
				if len(ends) > 0 {
					ends[0]()
					ends = ends[1:]
				}
			case <-hupCh:
				select {
				case hup <- struct{}{}:
				default: // one not yet logged says it
				}
			case <-done:
				return
			}
		}
	}()
	var once sync.Once
	return ctx, signalled{again: second, hup: hup}, func() {
		once.Do(func() { signal.Stop(ch); signal.Stop(hupCh); close(done); cancel() })
	}
}
