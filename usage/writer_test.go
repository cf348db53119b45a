package usage_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/switchyard/switchyard/usage"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// memStore records batches; gate, when set, holds every write until it is closed
// (or the write's context ends); fail makes writes fail.
type memStore struct {
	usage.None
	mu      sync.Mutex
	batches [][]usage.Record
	gate    chan struct{}
	fail    error
}

func (m *memStore) Write(ctx context.Context, b []usage.Record) error {
	if m.gate != nil {
		select {
		case <-m.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if m.fail != nil {
		return m.fail
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.batches = append(m.batches, append([]usage.Record(nil), b...))
	return nil
}

func (m *memStore) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, b := range m.batches {
		n += len(b)
	}
	return n
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestWriterBatchesAndDrainsOnClose: every queued record reaches the store by
// Close, in batches no larger than BatchSize.
func TestWriterBatchesAndDrainsOnClose(t *testing.T) {
	st := &memStore{}
	w := usage.NewWriter(usage.WriterConfig{Store: st, Log: quiet(), BatchSize: 7, FlushInterval: time.Hour})
	for i := range 100 {
		require.True(t, w.Add(usage.Record{RequestID: string(rune('a' + i%26))}))
	}
	require.NoError(t, w.Close(context.Background()))
	require.Equal(t, 100, st.count())
	for _, b := range st.batches {
		require.LessOrEqual(t, len(b), 7)
	}
	require.Zero(t, w.Dropped())
}

// TestWriterNeverBlocksAndCountsDrops: with the store stalled, Add returns at
// once; records past the queue are dropped and counted (metric and Dropped); a
// Close whose deadline passes drops (and counts) what is left instead of hanging.
func TestWriterNeverBlocksAndCountsDrops(t *testing.T) {
	st := &memStore{gate: make(chan struct{})}
	reg := prometheus.NewRegistry()
	m := usage.NewMetrics(reg)
	w := usage.NewWriter(usage.WriterConfig{Store: st, Log: quiet(), Metrics: m, QueueSize: 10, BatchSize: 5,
		FlushInterval: time.Millisecond, WriteTimeout: time.Hour})
	start := time.Now()
	accepted := 0
	for range 1000 {
		if w.Add(usage.Record{}) {
			accepted++
		}
	}
	require.Less(t, time.Since(start), 100*time.Millisecond, "Add must not wait for the store")
	require.LessOrEqual(t, accepted, 10+5, "the queue plus the batch being written")
	require.EqualValues(t, 1000-accepted, w.Dropped())
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := w.Close(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Zero(t, st.count(), "the stalled write was abandoned")
	require.EqualValues(t, 1000, w.Dropped(), "every record not written is counted")
	require.EqualValues(t, accepted, m.DroppedCount(usage.DropShutdown))
	require.EqualValues(t, 1000-accepted, m.DroppedCount(usage.DropQueueFull))
}

// TestWriterDropsABatchTheStoreKeepsRefusing: after a few tries the batch is
// dropped and counted as store_error.
func TestWriterDropsABatchTheStoreKeepsRefusing(t *testing.T) {
	st := &memStore{fail: errors.New("disk full")}
	m := usage.NewMetrics(prometheus.NewRegistry())
	w := usage.NewWriter(usage.WriterConfig{Store: st, Log: quiet(), Metrics: m, FlushInterval: time.Millisecond})
	w.Add(usage.Record{})
	w.Add(usage.Record{})
	require.Eventually(t, func() bool { return w.Dropped() == 2 }, 5*time.Second, time.Millisecond)
	require.NoError(t, w.Close(context.Background()))
	require.EqualValues(t, 2, m.DroppedCount(usage.DropStoreError))
}

// A batch is written as soon as it is full, without waiting for the ticker;
// a partial one waits for the ticker; Queued counts both until written.
func TestWriterWritesAFullBatchAtOnceAndAPartialOneOnItsTick(t *testing.T) {
	cases := []struct {
		name          string
		records, want int
		flush         time.Duration
	}{
		{"a full batch", 5, 5, time.Hour},
		{"two full batches and a partial one", 13, 10, time.Hour},
		{"a partial batch on its tick", 3, 3, 5 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := &memStore{}
			w := usage.NewWriter(usage.WriterConfig{Store: st, Log: quiet(), BatchSize: 5, FlushInterval: tc.flush})
			for range tc.records {
				require.True(t, w.Add(usage.Record{}))
			}
			require.Eventually(t, func() bool { return st.count() == tc.want }, 5*time.Second, time.Millisecond)
			require.Eventually(t, func() bool { return w.Queued() == tc.records-tc.want }, 5*time.Second, time.Millisecond)
			require.NoError(t, w.Close(context.Background()))
			require.Equal(t, tc.records, st.count(), "Close writes the rest")
			require.Zero(t, w.Queued())
		})
	}
}

// A batch size above half the queue is taken as half the queue: batches are
// still handed over as they fill, not only on the ticker.
func TestWriterBatchLargerThanTheQueue(t *testing.T) {
	st := &memStore{}
	w := usage.NewWriter(usage.WriterConfig{Store: st, Log: quiet(), QueueSize: 10, BatchSize: 500, FlushInterval: time.Hour})
	for range 10 {
		require.True(t, w.Add(usage.Record{}))
	}
	require.Eventually(t, func() bool { return st.count() == 10 }, 5*time.Second, time.Millisecond)
	require.NoError(t, w.Close(context.Background()))
	require.Zero(t, w.Dropped())
	for _, b := range st.batches {
		require.LessOrEqual(t, len(b), 5)
	}
}
