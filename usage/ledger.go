package usage

import (
	"context"
	"strings"
)

// Ledger is what the server hands each request's record to: it prices the
// record, adds its cost to the key's running spend, and queues it for the store.
// A nil *Ledger records nothing.
type Ledger struct {
	prices priceIndex
	writer *Writer
	spend  *Spend
	store  Store
	pruner *Pruner // nil: every record is kept
}

// NewLedger joins a price table, a writer, the running spend (nil: none) and the
// store the writer writes to (which queries read, and Close closes).
func NewLedger(prices Prices, w *Writer, spend *Spend, store Store) *Ledger {
	return &Ledger{prices: indexPrices(prices), writer: w, spend: spend, store: store}
}

// Record prices r (when it has no cost yet), adds the cost to its key's spend
// and queues r; it never waits for the store.
func (l *Ledger) Record(r *Record) {
	if l == nil {
		return
	}
	if r.CostUSD == nil && r.Provider != "" {
		r.CostUSD = l.price(r)
	}
	if l.spend != nil && r.CostUSD != nil && *r.CostUSD > 0 {
		l.spend.Add(r.KeyID, *r.CostUSD, r.Time)
	}
	l.writer.Add(*r)
}

// price is what r cost: its tokens at its final target's price, or, when its
// attempts carry their own tokens (a stream cut on one target and continued on
// another, a hedge's losing side that answered), each attempt at its own
// target's price plus what is left at the final target's. A part without a price
// adds nothing (its attempt's cost stays nil); nil when no part has one — never
// a made-up number.
func (l *Ledger) price(r *Record) *float64 {
	rest, sum, priced, billed := r.Tokens, 0.0, false, false
	for i := range r.Attempts {
		a := &r.Attempts[i]
		if a.Tokens == nil {
			continue
		}
		billed = true
		provider, model, _ := strings.Cut(a.Target, "/")
		if a.CostUSD = l.prices.cost(provider, model, *a.Tokens); a.CostUSD != nil {
			sum, priced = sum+*a.CostUSD, true
		}
		rest = rest.Minus(*a.Tokens)
	}
	if !billed {
		return l.prices.cost(r.Provider, r.TargetModel, r.Tokens)
	}
	if rest.Total() > 0 {
		if c := l.prices.cost(r.Provider, r.TargetModel, rest); c != nil {
			sum, priced = sum+*c, true
		}
	}
	if !priced {
		return nil
	}
	return &sum
}

// Store is the ledger's store, for queries.
func (l *Ledger) Store() Store {
	if l == nil {
		return None{}
	}
	return l.store
}

// Spend is the running spend per key (nil when budgets are not kept).
func (l *Ledger) Spend() *Spend {
	if l == nil {
		return nil
	}
	return l.spend
}

// Writer is the ledger's writer.
func (l *Ledger) Writer() *Writer { return l.writer }

// StartPruning keeps the store to cfg.Retention (see Pruner; cfg.Store is the
// ledger's). Call it once, before serving.
func (l *Ledger) StartPruning(cfg PrunerConfig) {
	cfg.Store = l.store
	l.pruner = NewPruner(cfg)
	l.pruner.Start()
}

// Close stops pruning, drains the queue into the store within ctx, then closes
// the store.
func (l *Ledger) Close(ctx context.Context) error {
	if l == nil {
		return nil
	}
	l.pruner.Close()
	err := l.writer.Close(ctx)
	if cerr := l.store.Close(); err == nil {
		err = cerr
	}
	return err
}
