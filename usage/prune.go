package usage

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// PruneBatch is the most records one prune statement deletes: a backlog goes a
// batch at a time, each a short transaction beside the writer's.
const PruneBatch = 10_000

// Pruner keeps a store to its retention: at start and every Interval it
// deletes the records older than Retention, a batch at a time.
type Pruner struct {
	cfg    PrunerConfig
	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	start  sync.Once     // Start's run, or Close's closing of done: the one that comes first
	done   chan struct{} // closed when run ends, or by Close if it never started
}

// PrunerConfig configures a Pruner.
type PrunerConfig struct {
	Store     Store
	Retention time.Duration
	// Interval is how often it prunes (hourly when zero).
	Interval time.Duration
	Log      *slog.Logger
	Metrics  *Metrics
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// NewPruner is a pruner of cfg; nil (nothing to do) when Retention is 0
// (keep every record). Start runs it in the background; Once prunes now.
func NewPruner(cfg PrunerConfig) *Pruner {
	if cfg.Retention <= 0 {
		return nil
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Hour
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Pruner{cfg: cfg, ctx: ctx, cancel: cancel, done: make(chan struct{})}
}

// Start prunes at once and then every Interval, until Close (not after Close).
func (p *Pruner) Start() {
	if p != nil {
		p.start.Do(func() { go p.run() })
	}
}

func (p *Pruner) run() {
	defer close(p.done)
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	for p.ctx.Err() == nil {
		if _, err := p.Once(p.ctx); err != nil && p.ctx.Err() == nil {
			p.cfg.Log.Warn("usage ledger: pruning records past usage.retention failed; trying again later",
				"retention", p.cfg.Retention, "err", err)
		}
		select {
		case <-t.C:
		case <-p.ctx.Done():
		}
	}
}

// Once deletes every record older than the retention now, a batch at a time,
// and says how many it deleted.
func (p *Pruner) Once(ctx context.Context) (int64, error) {
	before := p.cfg.Now().Add(-p.cfg.Retention)
	var total int64
	for {
		n, err := p.cfg.Store.Prune(ctx, before, PruneBatch)
		total += n
		p.cfg.Metrics.pruned(n)
		if err != nil || n < PruneBatch {
			if total > 0 {
				p.cfg.Log.Info("usage ledger: pruned records past usage.retention", "records", total, "before", before)
			}
			return total, err
		}
	}
}

// Close stops pruning (a prune under way is cancelled) and waits for it; safe
// to call more than once, or without Start.
func (p *Pruner) Close() {
	if p == nil {
		return
	}
	p.cancel()
	p.start.Do(func() { close(p.done) }) // never started: nothing to wait for
	<-p.done
}
