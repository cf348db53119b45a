package app

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/metrics"
	"github.com/switchyard/switchyard/usage"
)

// seedTimeout bounds reading the budgets' running totals from the store at start.
const seedTimeout = 10 * time.Second

// openLedger opens the usage store, the writer and the running spend (seeded
// from the store) from cfg's usage, pricing and pricing_file.
// totals is where budgets' running spend is kept: nil is this process's memory,
// else the shared state's (Redis), so that a budget holds across replicas.
func openLedger(ctx context.Context, cfg *config.Config, log *slog.Logger, m *metrics.Metrics, totals usage.Totals) (*usage.Ledger, error) {
	prices, err := pricesOf(cfg)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if cfg.Usage.Store == usage.StoreNone {
		log.Info("usage ledger off (usage.store: none): no records, no budgets")
		return nil, nil
	}
	st, err := usage.Open(ctx, usage.Options{Kind: cfg.Usage.Store, DataDir: cfg.Server.DataDir, DSN: string(cfg.Usage.DSN)})
	if err != nil {
		return nil, err
	}
	spend := usage.NewSpend(totals, nil)
	seed, cancel := context.WithTimeout(ctx, seedTimeout)
	defer cancel()
	if err := spend.Seed(seed, st); err != nil {
		st.Close()
		return nil, fmt.Errorf("usage store: reading the running spend: %w", err)
	}
	um := usage.NewMetrics(m.Registry())
	w := usage.NewWriter(usage.WriterConfig{Store: st, Log: log, Metrics: um,
		QueueSize: cfg.Usage.QueueSize, BatchSize: cfg.Usage.BatchSize, FlushInterval: cfg.Usage.FlushInterval})
	where := cfg.Usage.Store
	switch cfg.Usage.Store {
	case usage.StoreSQLite, "":
		where = filepath.Join(cfg.Server.DataDir, usage.FileName)
	case usage.StorePostgres:
		where = "postgres"
	}
	log.Info("usage ledger", "store", where, "priced_models", len(prices), "schema_version", usage.SchemaVersion(),
		"retention", cfg.Usage.Retention)
	l := usage.NewLedger(prices, w, spend, st)
	l.StartPruning(usage.PrunerConfig{Retention: cfg.Usage.Retention, Log: log, Metrics: um})
	return l, nil
}

// pricesOf is pricing_file's prices with pricing's own entries on top.
func pricesOf(cfg *config.Config) (usage.Prices, error) {
	var base usage.Prices
	if cfg.PricingFile != "" {
		var err error
		if base, err = usage.LoadPrices(cfg.PricingFile); err != nil {
			return nil, err
		}
	}
	own := make(usage.Prices, len(cfg.Pricing))
	for name, p := range cfg.Pricing {
		own[name] = usage.Price{Input: p.Input, Output: p.Output, CachedInput: p.CachedInput, CacheWriteInput: p.CacheWriteInput}
	}
	return usage.Merge(base, own), nil
}

// closeLedger writes what is still queued, within server.drain_timeout.
func (a *App) closeLedger() {
	if a.ledger == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), max(a.drainTimeout, time.Second))
	defer cancel()
	queued := a.ledger.Writer().Queued()
	if err := a.ledger.Close(ctx); err != nil {
		a.log.Error("usage ledger: not every record was written before the drain deadline", "queued", queued,
			"dropped_total", a.ledger.Writer().Dropped(), "error", err.Error())
		return
	}
	a.log.Info("usage ledger drained", "written_at_shutdown", queued, "dropped_total", a.ledger.Writer().Dropped())
}
