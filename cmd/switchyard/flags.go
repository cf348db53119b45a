package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"strings"
)

// options are the command line's settings.
type options struct {
	configPath string
	httpAddr   string
	grpcAddr   string
	logFormat  string
	logLevel   string
	version    bool
}

// usageError is a command line Switchyard cannot run with; the usage has already
// been printed to stderr with the reason. It exits 2.
type usageError struct{ reason string }

func (e usageError) Error() string { return e.reason }

// errHelp is --help or -h: usage went to stdout, and the exit code is 0.
var errHelp = errors.New("help requested")

// exitCode maps run's error to the process's exit code: 0 for success and help,
// 2 for a bad command line, 1 for everything else.
func exitCode(err error) int {
	switch {
	case err == nil, errors.Is(err, errHelp):
		return 0
	case isUsage(err):
		return 2
	}
	return 1
}

func isUsage(err error) bool {
	var u usageError
	return errors.As(err, &u)
}

// parseFlags reads args. --help prints the usage to stdout; a bad flag, an
// unknown positional argument or an unknown log format print the reason and the
// usage to stderr.
func parseFlags(args []string, stdout, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("switchyard", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.configPath, "config", "", "YAML config file (also SWITCHYARD_CONFIG); none: the built-in simulator")
	fs.StringVar(&o.httpAddr, "http-addr", "", "REST listen address, overrides server.http_addr (default 127.0.0.1:8080)")
	fs.StringVar(&o.grpcAddr, "grpc-addr", "", "gRPC listen address, overrides server.grpc_addr (default 127.0.0.1:9090)")
	fs.StringVar(&o.logFormat, "log-format", "", "log format: json or text (default: text on a terminal, else json; also SWITCHYARD_LOG_FORMAT)")
	fs.StringVar(&o.logLevel, "log-level", "", "log level: debug, info, warn or error (default info; also SWITCHYARD_LOG_LEVEL); debug adds a line per failed upstream attempt and per failover")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	usage := func(w io.Writer) {
		fmt.Fprintf(w, "Usage: switchyard [flags]\n\nSwitchyard serves the OpenAI-compatible REST surface and the gRPC services.\n\nFlags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	fail := func(reason string) (options, error) {
		fmt.Fprintf(stderr, "switchyard: %s\n\n", reason)
		usage(stderr)
		return o, usageError{reason: reason}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout)
			return o, errHelp
		}
		return fail(err.Error())
	}
	if fs.NArg() > 0 {
		return fail(fmt.Sprintf("unexpected argument %q: switchyard takes flags only (flags after it would be ignored)", fs.Arg(0)))
	}
	switch o.logFormat {
	case "", "json", "text":
	default:
		return fail(fmt.Sprintf("--log-format %q: want json or text", o.logFormat))
	}
	if _, err := parseLevel(o.logLevel); err != nil {
		return fail("--log-level " + err.Error())
	}
	return o, nil
}

// parseLevel reads a log level name; empty is info.
func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if s == "" {
		return slog.LevelInfo, nil
	}
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return l, fmt.Errorf("%q: want debug, info, warn or error", s)
	}
	return l, nil
}

// version is the module version and VCS revision the binary was built from.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+dirty"
			}
		}
	}
	parts := []string{v}
	if rev != "" {
		parts = append(parts, "revision "+rev+modified)
	}
	parts = append(parts, info.GoVersion)
	return strings.Join(parts, " ")
}
