package openai

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/providers/sse"
)

// FuzzStream feeds arbitrary bytes to the SSE stream reader: it must never panic
// or hang, and must end with io.EOF (only after a final event), a StreamError, or
// — before the first event — a provider Error.
func FuzzStream(f *testing.F) {
	head := `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"a"}`
	for _, seed := range []string{
		head + "}]}\n\n" + head + `,"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n",
		head + "}]}\r\n\r\n: comment\r\nevent: x\r\ndata: [DONE]\r\n\r\n",
		"data: {\"error\":{\"message\":\"x\",\"code\":429}}\n\n",
		"data: [DONE]\n\n", "", "data:", "\n\n\n", head + "}]}\n\ndata: {\"choices\":[{\"index\":\"zero\"}]}\n\n",
		"data: {\"a\":\ndata: 1}\n\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		s := newStream(&Client{name: "fuzz"}, sse.NewConnReader(ctx, cancel, io.NopCloser(bytes.NewReader(data)),
			sse.Buffered(bufio.NewReaderSize(bytes.NewReader(data), 16))), "m", 0)
		err := s.readFirst()
		if err != nil {
			var pe *providers.Error
			if !errors.As(err, &pe) {
				t.Fatalf("first event: unexpected error type %T: %v", err, err)
			}
			return
		}
		if len(s.held) == 0 {
			t.Fatal("no chunk and no error")
		}
		for i := 0; i <= len(data)+2; i++ {
			chunk, err := s.Recv()
			if errors.Is(err, io.EOF) {
				if !s.finished {
					t.Fatal("a clean end without a final event")
				}
				return
			}
			if err != nil {
				if !errors.Is(err, providers.ErrStreamIncomplete) {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if chunk == nil {
				t.Fatal("nil chunk without error")
			}
		}
		t.Fatal("the stream did not end")
	})
}

// FuzzRecvAndNextRawAgree: the gRPC surface (Recv) and the REST relay (NextRaw)
// read the same bytes to the same end — as many chunks, then io.EOF on both or
// the same kind of StreamError — whatever the chunks' choices and indexes.
func FuzzRecvAndNextRawAgree(f *testing.F) {
	chunk := func(choices string) string {
		return `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[` + choices + "]}\n\n"
	}
	open := func(i string) string { return `{"index":` + i + `,"delta":{"content":"a"},"finish_reason":null}` }
	stop := func(i string) string { return `{"index":` + i + `,"delta":{},"finish_reason":"stop"}` }
	done := "data: [DONE]\n\n"
	for _, seed := range []struct {
		n    uint8
		data string
	}{
		{1, chunk(open("0")) + chunk(stop("0")) + done},
		{1, chunk(open("0")) + chunk(open("0")+","+stop("1")) + done},
		{1, chunk(open("0")+","+stop("1")) + done},
		{1, chunk(open("0")) + chunk(stop("1")) + done},
		{1, chunk(open("0")) + chunk(open("1")) + chunk(stop("0")) + done},
		{1, chunk(open("0")) + chunk(stop("0")) + chunk(open("0")+","+open("1")) + done},
		{1, chunk(open("0")) + chunk(stop("0")+","+stop("-1")) + done},
		{1, chunk(open("0")) + chunk(`{"index":1,"index":0,"delta":{},"finish_reason":"stop"}`) + done},
		{1, chunk(open("0")) + "data: " + `{"id":"x","object":"o","created":1,"model":"m","choices":[` + stop("1") + `],"choices":[` + stop("0") + "]}\n\n" + done},
		{2, chunk(open("0")) + chunk(open("0")+","+stop("1")) + chunk(stop("0")) + done},
		{2, chunk(open("0")) + chunk(stop("0")) + done},
		{3, chunk(open("0")) + chunk(stop("0")+","+stop("1")+","+stop("2")) + done},
	} {
		f.Add(seed.n, []byte(seed.data))
	}
	f.Fuzz(func(t *testing.T, n uint8, data []byte) {
		choices := max(1, int(n%5)) // as Stream reads the request's n
		recv, recvErr := readAll(t, choices, data, false)
		raw, rawErr := readAll(t, choices, data, true)
		if recv != raw || verdict(recvErr) != verdict(rawErr) {
			t.Fatalf("n=%d: Recv read %d chunks then %v, NextRaw %d then %v, for %q", choices, recv, recvErr, raw, rawErr, data)
		}
	})
}

// readAll reads data as a stream of n choices, by Recv or NextRaw, and returns
// how many chunks it gave and what ended it.
func readAll(t *testing.T, n int, data []byte, raw bool) (int, error) {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	s := newStream(&Client{name: "fuzz"}, sse.NewConnReader(ctx, cancel, io.NopCloser(bytes.NewReader(data)),
		sse.Buffered(bufio.NewReaderSize(bytes.NewReader(data), 16))), "m", n)
	if err := s.readFirst(); err != nil {
		return 0, err
	}
	for i := 0; i <= len(data)+2; i++ {
		var err error
		if raw {
			_, err = s.NextRaw()
		} else {
			_, err = s.Recv()
		}
		if err != nil {
			return i, err
		}
	}
	t.Fatal("the stream did not end")
	return 0, nil
}

// verdict is what ended a stream, as a client would tell it apart.
func verdict(err error) string {
	var se *providers.StreamError
	var pe *providers.Error
	switch {
	case errors.Is(err, io.EOF):
		return "complete"
	case errors.As(err, &se):
		return "incomplete: " + se.Kind
	case errors.As(err, &pe):
		return "before the first chunk: " + pe.Code
	}
	return "other: " + err.Error()
}
