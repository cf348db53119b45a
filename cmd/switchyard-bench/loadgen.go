package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Where the load is generated. In "process" mode each run's closed loop is a
// child process of its own, as a user's clients are: it does not share the
// bench driver's heap, scheduler and GC with anything, and its CPU is reported
// beside the servers'. In "inline" mode (the harness before it had sizes) the
// driver generates the load itself.
const (
	loadInline  = "inline"
	loadProcess = "process"
)

// loadSpec is what a load child needs to rebuild a run's requests.
type loadSpec struct {
	Target string // REST URL, or the gRPC address for grpc modes
	GRPC   bool
	Stream bool
	KB     int
	Conc   int
	Warm   time.Duration
	Dur    time.Duration
}

// loadOut is what a load child reports when its measured window ends.
type loadOut struct {
	Reqs, Errs int
	Elapsed    time.Duration
	P50, P99   time.Duration
	CPU        time.Duration // the child's own user+sys time in the window
}

// serveLoad is the child: it warms up, prints "measuring", runs the measured
// window, then prints its loadOut as JSON.
func serveLoad(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	spec := fs.String("spec", "", "the run, as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var s loadSpec
	if err := json.Unmarshal([]byte(*spec), &s); err != nil {
		return err
	}
	pr := newPrompt(s.KB)
	var do func() error
	if s.GRPC {
		conn, err := grpc.NewClient(s.Target, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return err
		}
		defer conn.Close()
		do = grpcDo(conn, pr, s.Stream)
	} else {
		client := &http.Client{Transport: &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, DisableCompression: true}}
		do = restDo(client, s.Target, pr, s.Stream)
	}
	if err := do(); err != nil {
		return err
	}
	load(ctx, s.Conc, s.Warm, do)
	fmt.Println("measuring")
	before := selfCPU()
	n, errs, lat, elapsed := load(ctx, s.Conc, s.Dur, do)
	out := loadOut{Reqs: n, Errs: errs, Elapsed: elapsed, P50: percentile(lat, 0.5), P99: percentile(lat, 0.99), CPU: selfCPU() - before}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
	return nil
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runLoadProcess runs one measured window in a child process; atStart is
// called when the child begins measuring, so the server's CPU is read over the
// same window.
func runLoadProcess(ctx context.Context, s loadSpec, atStart func()) (loadOut, error) {
	self, err := os.Executable()
	if err != nil {
		return loadOut{}, err
	}
	spec, _ := json.Marshal(s)
	cmd := exec.CommandContext(ctx, self, "load", "-spec", string(spec))
	cmd.Stderr = os.Stderr
	cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(runtime.NumCPU()))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return loadOut{}, err
	}
	if err := cmd.Start(); err != nil {
		return loadOut{}, err
	}
	defer func() { _ = cmd.Wait() }()
	r := bufio.NewReader(stdout)
	line, err := r.ReadString('\n')
	if err != nil || line != "measuring\n" {
		return loadOut{}, fmt.Errorf("load process did not start measuring: %q %v", line, err)
	}
	atStart()
	line, err = r.ReadString('\n')
	if err != nil {
		return loadOut{}, fmt.Errorf("load process ended without a result: %w", err)
	}
	var out loadOut
	return out, json.Unmarshal([]byte(line), &out)
}
