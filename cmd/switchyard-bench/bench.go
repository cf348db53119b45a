package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
)

// proc is a server started as a child process.
type proc struct {
	cmd   *exec.Cmd
	addrs map[string]string
}

func startProc(ctx context.Context, env []string, args ...string) (*proc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Stderr = os.Stderr
	cmd.Env = append(append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(runtime.NumCPU())), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("%s did not start: %w", args[0], err)
	}
	p := &proc{cmd: cmd, addrs: map[string]string{}}
	for _, f := range strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "listening ")) {
		k, v, _ := strings.Cut(f, "=")
		p.addrs[k] = v
	}
	return p, nil
}

func (p *proc) stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
	}
}

// cpu returns the process's user+sys CPU time from /proc/PID/stat.
func (p *proc) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	const ticks = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticks
}

// peakRSS returns VmHWM in bytes.
func (p *proc) peakRSS() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

type result struct {
	name, mode string
	conc       int
	reqs       int
	errs       int
	elapsed    time.Duration
	p50, p99   time.Duration
	cpu        time.Duration
	rss        int64
	loadCPU    time.Duration // the load generator's CPU in the window
}

// loadShare is the load generator's CPU as a share of the whole machine's
// over the window (100% is every core busy).
func (r result) loadShare() float64 {
	if r.elapsed == 0 {
		return 0
	}
	return 100 * r.loadCPU.Seconds() / (r.elapsed.Seconds() * float64(runtime.NumCPU()))
}

func (r result) rps() float64 { return float64(r.reqs) / r.elapsed.Seconds() }

func (r result) cpuPerReq() time.Duration {
	if r.reqs == 0 {
		return 0
	}
	return r.cpu / time.Duration(r.reqs)
}

// load runs do from conc goroutines for d, closed loop.
func load(ctx context.Context, conc int, d time.Duration, do func() error) (reqs, errs int, lat []time.Duration, elapsed time.Duration) {
	type out struct {
		lat  []time.Duration
		errs int
	}
	ch := make(chan out, conc)
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	start := time.Now()
	for range conc {
		go func() {
			var o out
			for ctx.Err() == nil {
				t0 := time.Now()
				if err := do(); err != nil {
					o.errs++
					continue
				}
				o.lat = append(o.lat, time.Since(t0))
			}
			ch <- o
		}()
	}
	for range conc {
		o := <-ch
		lat = append(lat, o.lat...)
		errs += o.errs
	}
	return len(lat), errs, lat, time.Since(start)
}

func percentile(lat []time.Duration, q float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	sorted := append([]time.Duration(nil), lat...)
	slices.Sort(sorted)
	return sorted[int(q*float64(len(sorted)-1))]
}

func restDo(client *http.Client, url string, p prompt, stream bool) func() error {
	body := p.rest(stream)
	return func() error {
		resp, err := client.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			return err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != 200 {
			return fmt.Errorf("status %d: %s", resp.StatusCode, b)
		}
		if stream && !strings.HasSuffix(string(b), "data: [DONE]\n\n") {
			return errors.New("incomplete stream")
		}
		return nil
	}
}

// grpcDo is restDo for the gRPC surface: the request is encoded once, as
// restDo's body is, and the answers are taken as the bytes they arrived as, as
// restDo reads a body without decoding it (rawCodec). A user's client encodes
// and decodes on its own machine; the harness's shares these cores with the
// server, and encoding a 512 KB message with protobuf-go's reflection on every
// call took the gRPC load generator ~2x the CPU of the REST one, lowering the
// gRPC req/s for work no server does. A stream counts as done only with a
// message and an OK status at its end (io.EOF), as restDo wants [DONE].
func grpcDo(conn grpc.ClientConnInterface, p prompt, stream bool) func() error {
	req, err := proto.Marshal(p.grpc())
	if err != nil {
		panic(err) // a message built in this file
	}
	raw := grpc.ForceCodecV2(rawCodec{})
	return func() error {
		var msg mem.BufferSlice
		defer func() { msg.Free() }()
		if !stream {
			return conn.Invoke(context.Background(), pb.ChatService_CreateChatCompletion_FullMethodName, &req, &msg, raw)
		}
		st, err := conn.NewStream(context.Background(), &pb.ChatService_ServiceDesc.Streams[0],
			pb.ChatService_StreamChatCompletion_FullMethodName, raw)
		if err != nil {
			return err
		}
		if err := st.SendMsg(&req); err != nil {
			return err
		}
		if err := st.CloseSend(); err != nil {
			return err
		}
		for n := 0; ; n++ {
			if err := st.RecvMsg(&msg); err != nil {
				if err == io.EOF && n > 0 {
					return nil
				}
				if err == io.EOF {
					return errors.New("a stream without a message")
				}
				return err
			}
		}
	}
}

func bench(ctx context.Context, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("switchyard-bench", flag.ContinueOnError)
	conc := fs.Int("c", 32, "concurrent clients")
	dur := fs.Duration("d", 10*time.Second, "duration of each measured run")
	warm := fs.Duration("warmup", time.Second, "warm-up before each run")
	profile := fs.String("cpuprofile", "", "write Switchyard's CPU profile to this file")
	memProfile := fs.String("memprofile", "", "write Switchyard's allocation profile to this file")
	only := fs.String("only", "", "run only these modes (comma-separated: rest, grpc, rest-stream, grpc-stream), or the modes containing this text (e.g. stream)")
	latency := fs.Bool("latency", true, "also measure added p50 latency at c=1")
	loadgen := fs.String("loadgen", loadProcess, "where the load is generated: process (a child process per run, as a user's clients are) or inline (in this process)")
	sizes := fs.String("prompt-kb", "0", "prompt sizes in KB, comma-separated (e.g. 1,64,512); 0 is the classic two-message request")
	rounds := fs.Int("rounds", 1, "run every mode this many times, floor and Switchyard alternating, and give each ratio's median and range (a noisy machine moves one run by ±15 %)")
	ledger := fs.String("usage-store", "sqlite", "Switchyard's usage ledger: sqlite (the default a user gets) or none, to see what the ledger costs")
	upstreamProto := fs.String("upstream", "http", "how the floor and Switchyard reach the upstream: http, h1 (HTTPS, HTTP/1.1 only) or h2 (HTTPS offering HTTP/2)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	prompts, err := parseSizes(*sizes)
	if err != nil {
		return err
	}
	if *loadgen != loadProcess && *loadgen != loadInline {
		return fmt.Errorf("-loadgen: %q is neither process nor inline", *loadgen)
	}
	tmp, err := os.MkdirTemp("", "switchyard-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	upArgs, env, roots, err := upstreamSetup(*upstreamProto, tmp)
	if err != nil {
		return err
	}
	up, err := startProc(ctx, nil, append([]string{"upstream"}, upArgs...)...)
	if err != nil {
		return err
	}
	defer up.stop()
	upURL := "http://" + up.addrs["http"]
	if roots != nil {
		upURL = "https://" + up.addrs["https"]
	}
	floor, err := startProc(ctx, env, "proxy", "--upstream", upURL)
	if err != nil {
		return err
	}
	defer floor.stop()
	relayFloor, err := startProc(ctx, env, "relay", "--upstream", upURL)
	if err != nil {
		return err
	}
	defer relayFloor.stop()
	sy, err := startProc(ctx, env, "switchyard", "--upstream", upURL, "--cpuprofile", *profile, "--memprofile", *memProfile,
		"--usage-store", *ledger)
	if err != nil {
		return err
	}
	defer sy.stop()

	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, DisableCompression: true,
		TLSClientConfig: &tls.Config{RootCAs: roots}}}
	conn, err := grpc.NewClient(sy.addrs["grpc"], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	relayConn, err := grpc.NewClient(relayFloor.addrs["grpc"], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer relayConn.Close()

	type run struct {
		name, mode string
		p          *proc
		do         func() error
		spec       loadSpec
	}
	runsFor := func(pr prompt) []run {
		floorURL, syURL := "http://"+floor.addrs["http"]+"/v1/chat/completions", "http://"+sy.addrs["http"]+"/v1/chat/completions"
		spec := func(target string, grpc, stream bool) loadSpec {
			return loadSpec{Target: target, GRPC: grpc, Stream: stream, KB: pr.kb, Conc: *conc, Warm: *warm, Dur: *dur}
		}
		return []run{
			{"floor (reverse proxy)", "rest", floor, restDo(client, floorURL, pr, false), spec(floorURL, false, false)},
			{"switchyard", "rest", sy, restDo(client, syURL, pr, false), spec(syURL, false, false)},
			{"switchyard", "grpc", sy, grpcDo(conn, pr, false), spec(sy.addrs["grpc"], true, false)},
			{"floor (reverse proxy)", "rest-stream", floor, restDo(client, floorURL, pr, true), spec(floorURL, false, true)},
			{"switchyard", "rest-stream", sy, restDo(client, syURL, pr, true), spec(syURL, false, true)},
			{"switchyard", "grpc-stream", sy, grpcDo(conn, pr, true), spec(sy.addrs["grpc"], true, true)},
			// The gRPC floor, last so the rows above keep their places.
			{"floor (gRPC relay)", "grpc", relayFloor, grpcDo(relayConn, pr, false), spec(relayFloor.addrs["grpc"], true, false)},
			{"floor (gRPC relay)", "grpc-stream", relayFloor, grpcDo(relayConn, pr, true), spec(relayFloor.addrs["grpc"], true, true)},
		}
	}
	modes := map[string]bool{}
	for _, m := range strings.Split(*only, ",") {
		modes[m] = true
	}
	exact := false
	for _, r := range runsFor(prompts[0]) {
		exact = exact || modes[r.mode]
	}
	skip := func(mode string) bool {
		if exact {
			return !modes[mode]
		}
		return !strings.Contains(mode, *only)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "prompt\ttarget\tmode\tc\treq/s\tp50\tp99\tCPU/req\tpeak RSS\tload CPU\terrors\t\n")
	var summary strings.Builder
	for _, pr := range prompts {
		runs := runsFor(pr)
		var byRound [][]result
		for range max(*rounds, 1) {
			var results []result
			for _, r := range runs {
				if *only != "" && skip(r.mode) {
					results = append(results, result{name: r.name, mode: r.mode})
					continue
				}
				var res result
				if *loadgen == loadProcess {
					var before time.Duration
					out, err := runLoadProcess(ctx, r.spec, func() { before = r.p.cpu() })
					if err != nil {
						return fmt.Errorf("%s %s (%s prompt): %w", r.name, r.mode, pr.label(), err)
					}
					res = result{name: r.name, mode: r.mode, conc: *conc, reqs: out.Reqs, errs: out.Errs, elapsed: out.Elapsed,
						p50: out.P50, p99: out.P99, cpu: r.p.cpu() - before, rss: r.p.peakRSS(), loadCPU: out.CPU}
				} else {
					if err := r.do(); err != nil {
						return fmt.Errorf("%s %s (%s prompt): %w", r.name, r.mode, pr.label(), err)
					}
					load(ctx, *conc, *warm, r.do)
					before, driver := r.p.cpu(), selfCPU()
					n, errs, lat, elapsed := load(ctx, *conc, *dur, r.do)
					res = result{name: r.name, mode: r.mode, conc: *conc, reqs: n, errs: errs, elapsed: elapsed,
						p50: percentile(lat, 0.5), p99: percentile(lat, 0.99), cpu: r.p.cpu() - before, rss: r.p.peakRSS(),
						loadCPU: selfCPU() - driver}
				}
				results = append(results, res)
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.0f\t%v\t%v\t%v\t%.1f MB\t%.0f%%\t%d\t\n", pr.label(), res.name, res.mode, res.conc, res.rps(),
					res.p50.Round(time.Microsecond), res.p99.Round(time.Microsecond), res.cpuPerReq().Round(time.Microsecond),
					float64(res.rss)/(1<<20), res.loadShare(), res.errs)
			}
			byRound = append(byRound, results)
		}
		ratios := func(i, j int) string {
			var cpu, rps []float64
			for _, rs := range byRound {
				a, b := rs[i], rs[j]
				if a.reqs == 0 || b.reqs == 0 {
					return "not run"
				}
				cpu = append(cpu, float64(a.cpuPerReq())/float64(b.cpuPerReq()))
				rps = append(rps, a.rps()/b.rps())
			}
			return "CPU/req " + spread(cpu) + ", req/s " + spread(rps)
		}
		fmt.Fprintf(&summary, "\nratios Switchyard / floor, %s prompt (%d bytes on REST)\n", pr.label(), len(pr.rest(false)))
		fmt.Fprintf(&summary, "  non-stream REST: %s\n", ratios(1, 0))
		fmt.Fprintf(&summary, "  non-stream gRPC: %s\n", ratios(2, 0))
		fmt.Fprintf(&summary, "  stream REST:     %s\n", ratios(4, 3))
		fmt.Fprintf(&summary, "  stream gRPC:     %s\n", ratios(5, 3))
		if r := ratios(2, 1); r != "not run" {
			fmt.Fprintf(&summary, "  gRPC unary / REST: %s (target CPU/req <= 1)\n", r)
		}
		fmt.Fprintf(&summary, "  against the gRPC floor (grpc-go relaying the message's bytes, no gateway work):\n")
		fmt.Fprintf(&summary, "    gRPC floor / REST floor, non-stream: %s\n", ratios(6, 0))
		fmt.Fprintf(&summary, "    gRPC floor / REST floor, stream:     %s\n", ratios(7, 3))
		fmt.Fprintf(&summary, "    Switchyard gRPC / gRPC floor, non-stream: %s\n", ratios(2, 6))
		fmt.Fprintf(&summary, "    Switchyard gRPC / gRPC floor, stream:     %s\n", ratios(5, 7))
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "%s", summary.String())
	// Added latency at c=1 (first prompt size): each path's p50 minus the upstream's own p50.
	if *latency {
		runs := runsFor(prompts[0])
		direct := restDo(client, upURL+"/v1/chat/completions", prompts[0], false)
		_, _, dlat, _ := load(ctx, 1, *dur/2, direct)
		_, _, flat, _ := load(ctx, 1, *dur/2, runs[0].do)
		_, _, slat, _ := load(ctx, 1, *dur/2, runs[1].do)
		up50, fl50, sy50 := percentile(dlat, 0.5), percentile(flat, 0.5), percentile(slat, 0.5)
		fmt.Fprintf(w, "  added p50 at c=1: floor %v, switchyard %v (upstream alone %v) → %.2fx (target <= 1.5x)\n",
			(fl50 - up50).Round(time.Microsecond), (sy50 - up50).Round(time.Microsecond), up50.Round(time.Microsecond),
			float64(sy50-up50)/float64(max(fl50-up50, time.Microsecond)))
	}
	fmt.Fprintf(w, "targets: CPU/req <= 1.5x (1.3x for small prompts), req/s >= 0.8x; peak RSS is the process's high-water mark so far\n")
	fmt.Fprintf(w, "machine: %s/%s, %d CPUs, %s; upstream: %s; load generated %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), *upstreamProto, *loadgen)
	return nil
}

// spread is one ratio per round: the value for one round, else the median and
// the range.
func spread(v []float64) string {
	if len(v) == 1 {
		return fmt.Sprintf("%.2fx", v[0])
	}
	sorted := slices.Clone(v)
	slices.Sort(sorted)
	return fmt.Sprintf("%.2fx (%.2f-%.2f over %d rounds)", sorted[len(sorted)/2], sorted[0], sorted[len(sorted)-1], len(sorted))
}

// upstreamSetup returns the upstream's flags, the environment the floor and
// Switchyard need to trust it, and the bench client's roots (nil for plain HTTP).
func upstreamSetup(proto, dir string) (args, env []string, roots *x509.CertPool, err error) {
	switch proto {
	case "http":
		return nil, nil, nil, nil
	case "h1", "h2":
	default:
		return nil, nil, nil, fmt.Errorf("-upstream %q: want http, h1 or h2", proto)
	}
	certFile, keyFile, roots, err := selfSigned(dir)
	if err != nil {
		return nil, nil, nil, err
	}
	args = []string{"--tls-cert", certFile, "--tls-key", keyFile, "--h2=" + strconv.FormatBool(proto == "h2")}
	return args, []string{"SSL_CERT_FILE=" + certFile}, roots, nil
}
