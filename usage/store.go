package usage

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"
)

// Store kinds (usage.store).
const (
	StoreSQLite   = "sqlite"
	StorePostgres = "postgres"
	StoreNone     = "none"
	// FileName is the SQLite store's file in the data directory.
	FileName = "usage.db"
)

// ErrClosed is returned by a closed store.
var ErrClosed = errors.New("usage: store closed")

// ErrNoStore is returned by queries on the none store.
var ErrNoStore = errors.New("usage: no usage store configured (usage.store: none)")

// Store keeps records durably and answers queries on them.
type Store interface {
	// Write stores a batch of records in one transaction.
	Write(ctx context.Context, batch []Record) error
	// Query aggregates records (see Query).
	Query(ctx context.Context, q Query) ([]Group, error)
	// List returns records newest first, one page at a time.
	List(ctx context.Context, f ListFilter) (Page, error)
	// SpendSince sums the known cost per key of records since t (budgets' seed).
	SpendSince(ctx context.Context, t time.Time) (map[string]float64, error)
	// Prune deletes up to limit of the oldest records from before t (the
	// retention) and says how many it deleted.
	Prune(ctx context.Context, before time.Time, limit int) (int64, error)
	// Close releases the store.
	Close() error
}

// Filter selects records: a time range [From, To) and optional equalities.
type Filter struct {
	From, To time.Time
	KeyID    string
	Model    string // as asked
	Provider string // final target's provider
	// Status is an HTTP status (e.g. 429); 0 is any.
	Status int
	// ErrorsOnly keeps failed requests only.
	ErrorsOnly bool
	// RequestID keeps one request's record (usage_requests_request_id).
	RequestID string
}

// Group-by dimensions (Query.GroupBy).
const (
	ByKey          = "key"
	ByModel        = "model"
	ByProvider     = "provider"
	ByStatus       = "status"
	ByVirtualModel = "virtual_model"
	ByEndpoint     = "endpoint"
	ByTarget       = "target"
)

// Time buckets (Query.Bucket).
const (
	BucketNone = ""
	BucketHour = "hour"
	BucketDay  = "day"
)

// Query aggregates the records a Filter selects, grouped by dimensions and,
// optionally, by UTC hour or day.
type Query struct {
	Filter
	GroupBy []string
	Bucket  string
	// MaxRows bounds the records one query reads (0: DefaultMaxQueryRows):
	// percentiles are exact, so every latency of the range is held while it
	// is read, and a range of months on a busy gateway would hold hundreds of
	// megabytes. A range past it is ErrBadQuery, to be narrowed.
	MaxRows int
}

// DefaultMaxQueryRows is a query's bound when it sets none: 5M records hold
// ~80 MB of latencies while they are read.
const DefaultMaxQueryRows = 5_000_000

// Group is one row of a Query's answer.
type Group struct {
	// Key holds the group's value for each GroupBy dimension.
	Key map[string]string
	// Start is the bucket's start (zero without a bucket).
	Start time.Time
	// Requests counts records; Errors the failed ones; Unpriced those that
	// reached a target without a price (a call refused before any upstream, at
	// admission, was billed nothing and is not one).
	Requests, Errors, Unpriced int64
	// Tokens sums the records' tokens (Estimated: some of them were estimates).
	Tokens Tokens
	// CostUSD sums the priced records' cost.
	CostUSD float64
	// LatencyP50/P95 over the group's requests; TTFTP50/P95 over those with a first token.
	LatencyP50, LatencyP95, TTFTP50, TTFTP95 time.Duration
}

// ListFilter selects a page of records, newest first.
type ListFilter struct {
	Filter
	// PageSize is the most records a page holds (default 50, at most 1000).
	PageSize int
	// PageToken continues after the previous page (its NextPageToken).
	PageToken string
}

// Page is one page of records.
type Page struct {
	Records []Record
	// NextPageToken continues the listing; "" on the last page.
	NextPageToken string
}

// Options configures Open.
type Options struct {
	// Kind is sqlite (default), postgres or none.
	Kind string
	// DataDir holds the SQLite file.
	DataDir string
	// DSN is Postgres's connection string.
	DSN string
}

// Open opens (creating and migrating as needed) the configured store.
func Open(ctx context.Context, o Options) (Store, error) {
	switch o.Kind {
	case "", StoreSQLite:
		return OpenSQLite(ctx, filepath.Join(o.DataDir, FileName))
	case StorePostgres:
		return OpenPostgres(ctx, o.DSN)
	case StoreNone:
		return None{}, nil
	}
	return nil, fmt.Errorf("usage.store: unknown store %q (want sqlite, postgres or none)", o.Kind)
}

// None keeps nothing: writes succeed and queries answer ErrNoStore.
type None struct{}

func (None) Write(context.Context, []Record) error          { return nil }
func (None) Query(context.Context, Query) ([]Group, error)  { return nil, ErrNoStore }
func (None) List(context.Context, ListFilter) (Page, error) { return Page{}, ErrNoStore }
func (None) SpendSince(context.Context, time.Time) (map[string]float64, error) {
	return map[string]float64{}, nil
}
func (None) Prune(context.Context, time.Time, int) (int64, error) { return 0, nil }
func (None) Close() error                                         { return nil }
