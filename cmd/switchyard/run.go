package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/switchyard/switchyard/app"
	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/server"
	"github.com/switchyard/switchyard/tracing"
)

// run parses flags, loads the config, serves until ctx ends (the first signal),
// then drains; sig.again closing (a second signal) ends server.drain_delay early,
// and each SIGHUP (sig.hup) is logged and otherwise ignored.
func run(ctx context.Context, sig signalled, args []string, stdout, stderr io.Writer, env func(string) (string, bool)) error {
	o, err := parseFlags(args, stdout, stderr)
	if err != nil {
		return err
	}
	if o.version {
		fmt.Fprintln(stdout, "switchyard", version())
		return nil
	}
	if o.configPath == "" {
		o.configPath, _ = env("SWITCHYARD_CONFIG")
	}
	if o.logFormat == "" {
		o.logFormat, _ = env("SWITCHYARD_LOG_FORMAT")
		if o.logFormat != "" && o.logFormat != "json" && o.logFormat != "text" {
			return fmt.Errorf("SWITCHYARD_LOG_FORMAT=%q: want json or text", o.logFormat)
		}
	}
	if o.logLevel == "" {
		o.logLevel, _ = env("SWITCHYARD_LOG_LEVEL")
	}
	level, err := parseLevel(o.logLevel)
	if err != nil {
		return fmt.Errorf("SWITCHYARD_LOG_LEVEL=%w", err)
	}
	log := newLogger(stdout, o.logFormat, level)
	log.Info("Switchyard starting", "version", version())
	cfg, err := config.Load(o.configPath, env)
	if err != nil {
		return err
	}
	if o.httpAddr != "" {
		cfg.Server.HTTPAddr = o.httpAddr
	}
	if o.grpcAddr != "" {
		cfg.Server.GRPCAddr = o.grpcAddr
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
	stopped := make(chan struct{})
	defer close(stopped)
	go func() {
		for {
			select {
			case <-sig.hup:
				log.Warn("SIGHUP ignored: Switchyard does not reload its configuration; restart it to apply a change " +
					"(SIGTERM drains first); keys and virtual models change at run time through the admin API")
			case <-stopped:
				return
			}
		}
	}()
	select {
	case err := <-a.Done():
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: readiness off, serving on for drain_delay, then draining in-flight calls",
		"drain_delay_ms", server.Millis(cfg.Server.DrainDelay), "drain_timeout_ms", server.Millis(cfg.Server.DrainTimeout))
	go func() {
		select {
		case <-sig.again:
			log.Info("second signal: ending drain_delay, draining now")
			a.EndDrainDelay()
		case <-stopped:
		}
	}()
	if err := a.Shutdown(context.Background()); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped")
	return nil
}

// newLogger logs in format (json or text); "" picks text on a terminal, else json.
func newLogger(w io.Writer, format string, level slog.Level) *slog.Logger {
	if format == "" {
		format = "json"
		if f, ok := w.(*os.File); ok {
			if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
				format = "text"
			}
		}
	}
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: durationsInMillis}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// durationsInMillis writes every duration in a log line as milliseconds under a
// name that says so (latency → latency_ms), in JSON and text alike, so that no log
// field is a bare number of nanoseconds.
func durationsInMillis(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.Float64(a.Key+"_ms", server.Millis(a.Value.Duration()))
	}
	return a
}
