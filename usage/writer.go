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
//
// The queue is made of batches: Add fills one, and hands it to the writer's
// goroutine when it is full (or the ticker takes it as it is). A channel of
// QueueSize records was a 3 MB array of pointers the garbage collector scanned
// in every cycle, however empty, and woke the writer for every record.
type Writer struct {
	cfg WriterConfig

	mu     sync.Mutex
	cur    []Record      // the batch Add fills (nil: none yet)
	spare  []Record      // a written batch's array, for the next
	queued int           // records in cur, in full and being written
	full   chan []Record // batches ready for the store

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
	// A batch is handed over when full: one larger than half the queue would
	// leave the writer waiting for its ticker while the queue overflows.
	cfg.BatchSize = min(cfg.BatchSize, max(1, cfg.QueueSize/2))
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = DefaultFlushInterval
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	// queued bounds the batches waiting: at most QueueSize/BatchSize full ones.
	w := &Writer{cfg: cfg, full: make(chan []Record, cfg.QueueSize/cfg.BatchSize+1),
		quit: make(chan struct{}), done: make(chan struct{})}
	w.abortCtx, w.abort = context.WithCancel(context.Background())
	go w.loop()
	return w
}

// Add queues r for the store without waiting; false when it was dropped.
func (w *Writer) Add(r Record) bool {
	w.mu.Lock()
	if w.queued >= w.cfg.QueueSize {
		w.mu.Unlock()
		w.drop(DropQueueFull, 1)
		return false
	}
	if w.cur == nil {
		w.cur, w.spare = w.spare, nil
		if w.cur == nil {
			w.cur = make([]Record, 0, w.cfg.BatchSize)
		}
	}
	w.cur = append(w.cur, r)
	w.queued++
	if len(w.cur) >= w.cfg.BatchSize {
		w.full <- w.cur // never waits: queued bounds the full batches below full's capacity
		w.cur = nil
	}
	w.mu.Unlock()
	return true
}

// take is the batch being filled, for the store as it is (nil: empty).
func (w *Writer) take() []Record {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.cur
	w.cur = nil
	return b
}

// written gives back a written (or dropped) batch: its records leave the
// queue, its array is kept for the next batch.
func (w *Writer) written(b []Record) {
	clear(b) // the records' strings are not kept alive by the spare array
	w.mu.Lock()
	w.queued -= len(b)
	if w.spare == nil {
		w.spare = b[:0]
	}
	w.mu.Unlock()
}

// Dropped is how many records were dropped so far, for any reason.
func (w *Writer) Dropped() int64 { return w.dropped.Load() }

// Queued is how many records wait for the store.
func (w *Writer) Queued() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.queued
}

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
	tick := time.NewTicker(w.cfg.FlushInterval)
	defer tick.Stop()
	store := func(b []Record) { // b is never empty: a full batch, or what take found
		w.write(b)
		w.written(b)
	}
	for {
		select {
		case b := <-w.full:
			store(b)
		case <-tick.C:
			if b := w.take(); b != nil {
				store(b)
			}
		case <-w.quit:
			for {
				select {
				case b := <-w.full:
					store(b)
					continue
				default:
				}
				if b := w.take(); b != nil {
					store(b)
					continue // the full ones first, then what was being filled
				}
				return
			}
		}
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
