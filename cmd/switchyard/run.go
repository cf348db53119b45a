package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/switchyard/switchyard/app"
	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/tracing"
)

// run parses flags, loads the config, serves until ctx ends, then drains.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, env func(string) (string, bool)) error {
	fs := flag.NewFlagSet("switchyard", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "YAML config file (also SWITCHYARD_CONFIG)")
	httpAddr := fs.String("http-addr", "", "REST listen address (overrides server.http_addr)")
	grpcAddr := fs.String("grpc-addr", "", "gRPC listen address (overrides server.grpc_addr)")
	logFormat := fs.String("log-format", "", "log format: json or text (default: text on a terminal, else json)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *configPath == "" {
		*configPath, _ = env("SWITCHYARD_CONFIG")
	}
	log := newLogger(stdout, *logFormat, env)
	cfg, err := config.Load(*configPath, env)
	if err != nil {
		return err
	}
	if *httpAddr != "" {
		cfg.Server.HTTPAddr = *httpAddr
	}
	if *grpcAddr != "" {
		cfg.Server.GRPCAddr = *grpcAddr
	}
	tp, stopTracing, err := tracing.FromEnv(ctx, env)
	if err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	defer func() { _ = stopTracing(context.Background()) }()
	if tracing.Enabled(env) {
		log.Info("tracing on: exporting spans over OTLP as the OTEL_* environment says")
	}
	a, err := app.Start(ctx, cfg, log, app.WithTracerProvider(tp))
	if err != nil {
		return err
	}
	select {
	case err := <-a.Done():
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: readiness off, draining in-flight calls", "deadline", cfg.Server.DrainTimeout)
	if err := a.Shutdown(context.Background()); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped")
	return nil
}

func newLogger(w io.Writer, format string, env func(string) (string, bool)) *slog.Logger {
	if format == "" {
		format, _ = env("SWITCHYARD_LOG_FORMAT")
	}
	if format == "" {
		format = "json"
		if f, ok := w.(*os.File); ok {
			if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
				format = "text"
			}
		}
	}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, nil))
	}
	return slog.New(slog.NewJSONHandler(w, nil))
}
