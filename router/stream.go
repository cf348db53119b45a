package router

import (
	"context"
	"errors"
	"io"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/providers"
)

// finished wraps an open stream so that its end reaches the target's breaker:
// io.EOF (complete) is a success, an error that ends it (a cut, a stall, a broken
// chunk, an in-band error) is that target's failure, and Close before either (the
// client left, the server gave up on it) counts as nothing.
func finished(s providers.Stream, finish func(error)) providers.Stream {
	f := &finishStream{s: s, finish: finish}
	f.pender, _ = s.(providers.Pender)
	if raw, ok := s.(providers.RawStream); ok {
		return &rawFinishStream{finishStream: f, raw: raw}
	}
	return f
}

type finishStream struct {
	s      providers.Stream
	pender providers.Pender
	finish func(error)
}

// end reports err if it ends the stream.
func (f *finishStream) end(err error) { reportEnd(f.finish, err) }

// reportEnd calls finish if err ends a stream: io.EOF is a clean end (nil).
func reportEnd(finish func(error), err error) {
	switch {
	case err == nil:
	case errors.Is(err, io.EOF):
		finish(nil)
	default:
		finish(err)
	}
}

func (f *finishStream) Recv() (*pb.ChatCompletionChunk, error) {
	c, err := f.s.Recv()
	f.end(err)
	return c, err
}

// Pending reports whether the next chunk is at hand (false if the stream cannot tell).
func (f *finishStream) Pending() bool { return f.pender != nil && f.pender.Pending() }

func (f *finishStream) Close() error {
	f.finish(context.Canceled) // nothing to the breaker; a no-op after the stream's end
	return f.s.Close()
}

type rawFinishStream struct {
	*finishStream
	raw providers.RawStream
}

func (f *rawFinishStream) NextRaw() (providers.RawChunk, error) {
	c, err := f.raw.NextRaw()
	f.end(err)
	return c, err
}

// WatchEvents is Streaming's watch for a stream of wire-native events: its end
// (io.EOF, an error, or Close first) reaches end as finished's does.
func WatchEvents(s providers.EventStream, end func(error)) providers.EventStream {
	return &eventWatch{s: s, end: end}
}

type eventWatch struct {
	s   providers.EventStream
	end func(error)
}

func (w *eventWatch) Next() (providers.Event, error) {
	ev, err := w.s.Next()
	reportEnd(w.end, err)
	return ev, err
}

func (w *eventWatch) Close() error {
	w.end(context.Canceled) // nothing to the breaker; a no-op after the stream's end
	return w.s.Close()
}
