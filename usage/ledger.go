package usage

import "context"

// Ledger is what the server hands each request's record to: it prices the
// record, adds its cost to the key's running spend, and queues it for the store.
// A nil *Ledger records nothing.
type Ledger struct {
	prices priceIndex
	writer *Writer
	spend  *Spend
	store  Store
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
		r.CostUSD = l.prices.cost(r.Provider, r.TargetModel, r.Tokens)
	}
	if l.spend != nil && r.CostUSD != nil && *r.CostUSD > 0 {
		l.spend.Add(r.KeyID, *r.CostUSD, r.Time)
	}
	l.writer.Add(*r)
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

// Close drains the queue into the store within ctx, then closes the store.
func (l *Ledger) Close(ctx context.Context) error {
	if l == nil {
		return nil
	}
	err := l.writer.Close(ctx)
	if cerr := l.store.Close(); err == nil {
		err = cerr
	}
	return err
}
