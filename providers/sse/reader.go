// Package sse reads an upstream's Server-Sent Events and keeps the rules every
// streaming provider shares: the read bound (providers.MaxResponseBytes per
// event), pooled read buffers, the first-token deadline, the idle timer, and
// when a stream that stops is incomplete (a *providers.StreamError).
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/switchyard/switchyard/providers"
)

// ErrEventTooLarge is an event longer than providers.MaxResponseBytes.
var ErrEventTooLarge = fmt.Errorf("a stream event larger than the %d MiB Switchyard reads", providers.MaxResponseBytes>>20)

// bufSize is the size of the pooled read buffers.
const bufSize = 32 << 10

// Reader reads Server-Sent Events: each event's type ("event:") and data.
type Reader struct {
	rd   *bufio.Reader
	data bytes.Buffer
	// begun is set once the first line was read (and its BOM, if any, dropped).
	begun bool
}

// bom is the byte order mark the SSE standard ignores once at a stream's start.
var bom = []byte("\xEF\xBB\xBF")

// NewReader reads r through a pooled buffer; Release returns it.
func NewReader(r io.Reader) Reader {
	rd := readers.Get().(*bufio.Reader)
	rd.Reset(r)
	return Reader{rd: rd}
}

// Buffered reads rd (tests use it to read through a buffer of their size).
func Buffered(rd *bufio.Reader) Reader { return Reader{rd: rd} }

// Next returns the next event that has data; io.EOF at the end. Data is valid
// until the next call. An event cut off by the end of the stream (no blank line)
// is returned with io.ErrUnexpectedEOF, one longer than MaxResponseBytes with
// ErrEventTooLarge. Comments and the id and retry fields are skipped, and one
// byte order mark at the stream's start.
func (r *Reader) Next() (providers.Event, error) {
	if r.rd == nil {
		return providers.Event{}, io.EOF // released
	}
	r.data.Reset()
	typ := ""
	for {
		line, err := r.rd.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A very long line: gather the rest of it, up to the bound.
			full := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				if len(full)+r.data.Len() > providers.MaxResponseBytes {
					return providers.Event{}, ErrEventTooLarge
				}
				line, err = r.rd.ReadSlice('\n')
				full = append(full, line...)
			}
			line = full
		}
		if len(line)+r.data.Len() > providers.MaxResponseBytes {
			return providers.Event{}, ErrEventTooLarge
		}
		if err != nil {
			if len(line) > 0 || r.data.Len() > 0 {
				return providers.Event{}, io.ErrUnexpectedEOF
			}
			return providers.Event{}, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if !r.begun { // one leading BOM is ignored (WHATWG HTML, server-sent events)
			r.begun = true
			line = bytes.TrimPrefix(line, bom)
		}
		if len(line) == 0 {
			if r.data.Len() > 0 {
				return providers.Event{Type: typ, Data: r.data.Bytes()}, nil
			}
			typ = "" // an event without data is not dispatched
			continue
		}
		if rest, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			if r.data.Len() > 0 {
				r.data.WriteByte('\n')
			}
			r.data.Write(bytes.TrimPrefix(rest, []byte(" ")))
		} else if rest, ok := bytes.CutPrefix(line, []byte("event:")); ok {
			typ = eventType(bytes.TrimPrefix(rest, []byte(" ")))
		}
	}
}

// knownTypes are the event types upstreams send, returned without allocating.
var knownTypes = []string{"message_start", "content_block_start", "content_block_delta", "content_block_stop",
	"message_delta", "message_stop", "ping", "error"}

func eventType(b []byte) string {
	for _, t := range knownTypes {
		if string(b) == t { // compared without a conversion
			return t
		}
	}
	return string(b)
}

// Pending reports whether a whole further event is already buffered, so that the
// next read will not wait for the upstream.
func (r *Reader) Pending() bool {
	if r.rd == nil {
		return false
	}
	n := r.rd.Buffered()
	if n == 0 {
		return false
	}
	b, _ := r.rd.Peek(n)
	i := bytes.Index(b, []byte("data:"))
	return i >= 0 && (bytes.Contains(b[i:], []byte("\n\n")) || bytes.Contains(b[i:], []byte("\r\n\r\n")))
}

// readers recycles the 32 KiB stream read buffers: one per stream would otherwise
// be most of the garbage a streaming request makes.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, bufSize) }}

// Release recycles the read buffer; the reader must not be read again.
func (r *Reader) Release() {
	if r.rd == nil || r.rd.Size() != bufSize {
		return // not one of ours
	}
	r.rd.Reset(nil)
	readers.Put(r.rd)
	r.rd = nil
}
