package router

import (
	"context"
	"errors"
	"io"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/resilience"
)

// finished wraps an open stream so that its end reaches the target's breaker:
// io.EOF (complete) is a success, an error that ends it (a cut, a stall, a broken
// chunk, an in-band error) is that target's failure, and Close before either (the
// client left, the server gave up on it) counts as nothing.
func finished(s providers.Stream, finish resilience.Finish) providers.Stream {
	f := &finishStream{s: s, finish: finish}
	f.pender, _ = s.(providers.Pender)
	if raw, ok := s.(providers.RawStream); ok {
		return &rawFinishStream{finishStream: f, raw: raw}
	}
	return f
}

// finished is finished with the stream's end also in route's request health (the
// admin API's window): a stream that breaks after its first event, recorded a
// success when that event arrived, adds a failure when it breaks.
func (r *Router) finished(s providers.Stream, route Route, finish resilience.Finish) providers.Stream {
	return finished(s, func(err error) {
		if err != nil {
			r.record(route, err) // record ignores cancellation: a client leaving is nothing
		}
		finish(err)
	})
}

type finishStream struct {
	s      providers.Stream
	pender providers.Pender
	finish resilience.Finish
}

// end reports err if it ends the stream.
func (f *finishStream) end(err error) {
	switch {
	case err == nil:
	case errors.Is(err, io.EOF):
		f.finish(nil)
	default:
		f.finish(err)
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
