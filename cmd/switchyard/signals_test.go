package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/testutil"
)

// TestSignalsFirstEndsContextSecondClosesAgain: the first SIGTERM or SIGINT ends
// the serving context, the second closes again (which ends server.drain_delay).
func TestSignalsFirstEndsContextSecondClosesAgain(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			ctx, later, stop := signals()
			defer stop()
			again := later.again
			require.NoError(t, syscall.Kill(os.Getpid(), sig))
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the first signal did not end the context")
			}
			require.Empty(t, again, "one signal does not end the delay")
			require.NoError(t, syscall.Kill(os.Getpid(), sig))
			select {
			case <-again:
			case <-time.After(10 * time.Second):
				t.Fatal("the second signal did not close again")
			}
			stop()
		})
	}
}

// TestSecondSignalEndsTheDrainDelay: with server.drain_delay: 1h, run serves on
// after its context ends, and returns once again closes.
func TestSecondSignalEndsTheDrainDelay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "switchyard.yaml")
	require.NoError(t, os.WriteFile(path, []byte("server:\n  drain_delay: 1h\n  data_dir: "+t.TempDir()+"\n"), 0o600))
	ctx, cancel := context.WithCancel(context.Background())
	again := make(chan struct{})
	out := &testutil.LogBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, signalled{again: again}, []string{"--config", path, "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, out, io.Discard, noEnv)
	}()
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "Switchyard is serving") }, 10*time.Second, 10*time.Millisecond)
	cancel()
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "shutting down") }, 10*time.Second, 10*time.Millisecond)
	require.Empty(t, done, "run serves on during the drain delay")
	close(again)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("run did not return after the second signal")
	}
	require.Contains(t, out.String(), "stopped")
}

// TestSIGHUPIsLoggedAndServingGoesOn: a SIGHUP neither ends the serving context
// nor the process (its default action); run logs that nothing was reloaded.
func TestSIGHUPIsLoggedAndServingGoesOn(t *testing.T) {
	ctx, sig, stop := signals()
	defer stop()
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGHUP))
	select {
	case <-sig.hup:
	case <-time.After(10 * time.Second):
		t.Fatal("SIGHUP was not noted")
	}
	require.NoError(t, ctx.Err(), "SIGHUP does not end serving")

	path := filepath.Join(t.TempDir(), "switchyard.yaml")
	require.NoError(t, os.WriteFile(path, []byte("server:\n  data_dir: "+t.TempDir()+"\n"), 0o600))
	runCtx, cancel := context.WithCancel(context.Background())
	hup := make(chan struct{}, 1)
	out := &testutil.LogBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(runCtx, signalled{hup: hup}, []string{"--config", path, "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, out, io.Discard, noEnv)
	}()
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "Switchyard is serving") }, 10*time.Second, 10*time.Millisecond)
	hup <- struct{}{}
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "SIGHUP ignored") }, 10*time.Second, 10*time.Millisecond)
	require.Empty(t, done, "run serves on after SIGHUP")
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("run did not return")
	}
}
