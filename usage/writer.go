package usage

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Writer defaults (WriterConfig's zero values).
const (
	// DefaultQueueSize bounds the records waiting for the store.
	DefaultQueueSize = 10000
	// DefaultBatchSize is the most records one store write takes.
	DefaultBatchSize = 500
	// DefaultFlushInterval is the longest a record waits for a batch to fill.
	DefaultFlushInterval = 200 * time.Millisecond
	// DefaultWriteTimeout bounds one store write.
	DefaultWriteTimeout = 5 * time.Second
	// writeTries is how often a failing batch is written before it is dropped.
	writeTries = 3
)

// Drop reasons.
const (
	DropQueueFull  = "queue_full"
	DropStoreError = "store_error"
	DropShutdown   = "shutdown_deadline"
)

// WriterConfig configures NewWriter.
type WriterConfig struct {
	// Store receives the batches (required).
	Store Store
	// Log reports drops and store errors (required).
	Log *slog.Logger
	// Metrics counts written and dropped records (optional).
	Metrics *Metrics
	// QueueSize, BatchSize, FlushInterval, WriteTimeout: zero means the Default.
	QueueSize, BatchSize        int
	FlushInterval, WriteTimeout time.Duration
}

// Writer hands records to a Store in batches, off the request path. Add never
// blocks: when the queue is full the record is dropped and counted (a metric and
// a log line at most once a second). Close drains what is queued.
type Writer struct {
	cfg   WriterConfig
	queue chan Record
	// full wakes the writer when a batch is queued; otherwise it wakes on its
	// ticker alone (woken by every record, it cost a goroutine switch each).
	full chan struct{}
	quit chan struct{}
	done chan struct{}
	once sync.Once
	// abort ends a write in progress when Close's deadline passes.
	abortCtx context.Context
	abort    context.CancelFunc

	dropped  atomic.Int64
	lastLog  atomic.Int64 // unix nanos of the last drop log line
	shutdown atomic.Bool  // Close's deadline passed: drop what is left
}

// NewWriter starts the writer's goroutine.
func NewWriter(cfg WriterConfig) *Writer {
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = DefaultQueueSize
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = DefaultFlushInterval
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	w := &Writer{cfg: cfg, queue: make(chan Record, cfg.QueueSize), full: make(chan struct{}, 1),
		quit: make(chan struct{}), done: make(chan struct{})}
	w.abortCtx, w.abort = context.WithCancel(context.Background())
	go w.loop()
	return w
}

// Add queues r for the store without waiting; false when it was dropped.
func (w *Writer) Add(r Record) bool {
	select {
	case w.queue <- r:
		if len(w.queue) >= w.cfg.BatchSize {
			select {
			case w.full <- struct{}{}:
			default: // already woken
			}
		}
		return true
	default:
		w.drop(DropQueueFull, 1)
		return false
	}
}

// Dropped is how many records were dropped so far, for any reason.
func (w *Writer) Dropped() int64 { return w.dropped.Load() }

// Queued is how many records wait for the store.
func (w *Writer) Queued() int { return len(w.queue) }

func (w *Writer) drop(reason string, n int) {
	w.dropped.Add(int64(n))
	w.cfg.Metrics.dropped(reason, n)
	now := time.Now().UnixNano()
	if last := w.lastLog.Load(); now-last >= int64(time.Second) && w.lastLog.CompareAndSwap(last, now) {
		w.cfg.Log.Warn("usage records dropped", "reason", reason, "count", n, "dropped_total", w.dropped.Load(),
			"queue_size", w.cfg.QueueSize)
	}
}

// Close stops taking new batches once the queue is empty: every queued record is
// written, unless ctx ends first (then the rest is dropped and counted). Callers
// stop adding before Close (the server has drained its requests).
func (w *Writer) Close(ctx context.Context) error {
	w.once.Do(func() { close(w.quit) })
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		w.shutdown.Store(true)
		w.abort() // a stalled write gives up; what is left is counted as dropped
		<-w.done
		return ctx.Err()
	}
}

func (w *Writer) loop() {
	defer close(w.done)
	defer w.abort()
	batch := make([]Record, 0, w.cfg.BatchSize)
	tick := time.NewTicker(w.cfg.FlushInterval)
	defer tick.Stop()
	for {
		select {
		case <-w.full:
		case <-tick.C:
		case <-w.quit:
			w.writeQueued(batch)
			return
		}
		w.writeQueued(batch)
	}
}

// writeQueued writes what is queued, in batches of at most BatchSize (batch is
// the space for one).
func (w *Writer) writeQueued(batch []Record) {
	for {
		batch = batch[:0]
		for len(batch) < w.cfg.BatchSize {
			select {
			case r := <-w.queue:
				batch = append(batch, r)
				continue
			default:
			}
			break
		}
		if len(batch) == 0 {
			return
		}
		w.write(batch)
		clear(batch) // the records' strings are not kept alive by the spare batch
	}
}

// write stores one batch, trying a few times; a batch that keeps failing (or
// is still queued when Close's deadline passes) is dropped and counted.
func (w *Writer) write(batch []Record) {
	var err error
	for try := 0; try < writeTries; try++ {
		if w.shutdown.Load() {
			w.drop(DropShutdown, len(batch))
			return
		}
		ctx, cancel := context.WithTimeout(w.abortCtx, w.cfg.WriteTimeout)
		start := time.Now()
		err = w.cfg.Store.Write(ctx, batch)
		cancel()
		w.cfg.Metrics.batch(time.Since(start), err)
		if err == nil {
			w.cfg.Metrics.written(len(batch))
			return
		}
		if errors.Is(err, ErrClosed) {
			break
		}
		if w.shutdown.Load() {
			w.drop(DropShutdown, len(batch))
			return
		}
		w.cfg.Log.Warn("usage store write failed", "records", len(batch), "try", try+1, "error", err.Error())
		select {
		case <-time.After(time.Duration(try+1) * 100 * time.Millisecond):
		case <-w.quit:
		}
	}
	w.drop(DropStoreError, len(batch))
}
