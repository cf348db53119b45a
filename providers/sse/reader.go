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
	// skipLF: the last line ended in a CR that was the last byte buffered; an
	// LF that comes next is the rest of that CRLF, not another line end.
	skipLF bool
	// win is what Next has not read of the buffered bytes, used how many bytes
	// before it Next has read: they are discarded once, when it returns or
	// must wait for more.
	win  []byte
	used int
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
	r.win, _ = r.rd.Peek(r.rd.Buffered()) // what is buffered: never an error
	ev, err := r.next()
	r.rd.Discard(r.used) // the lines read: Pending looks past them
	r.win, r.used = nil, 0
	return ev, err
}

func (r *Reader) next() (providers.Event, error) {
	r.data.Reset()
	typ := ""
	for {
		line, err := r.line()
		if len(line)+r.data.Len() > providers.MaxResponseBytes {
			return providers.Event{}, ErrEventTooLarge
		}
		if err != nil {
			if errors.Is(err, ErrEventTooLarge) {
				return providers.Event{}, err
			}
			if len(line) > 0 || r.data.Len() > 0 {
				return providers.Event{}, io.ErrUnexpectedEOF
			}
			return providers.Event{}, err
		}
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

// line returns the next line without its end: CRLF, LF, or a CR alone (the SSE
// standard's three). A CR that is the last byte buffered ends its line at once,
// so that an event is not held back until the upstream's next bytes; an LF
// those bytes begin with is skipped as the rest of that CRLF. At the stream's
// end it returns what is left of a cut line with the error. A line longer than
// the buffer is gathered up to the bound (ErrEventTooLarge). The line is valid
// until the next read.
func (r *Reader) line() ([]byte, error) {
	var long []byte
	for {
		buf := r.win
		if r.skipLF && len(buf) > 0 {
			r.skipLF = false
			if buf[0] == '\n' {
				r.take(nil, nil, 1)
				buf = r.win
			}
		}
		// LF first: the common line ends (LF, CRLF) cost one more scan of the
		// line, for a CR before its end.
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			switch j := bytes.IndexByte(buf[:i], '\r'); {
			case j < 0:
				return r.take(long, buf[:i], i+1), nil // LF
			case j == i-1:
				return r.take(long, buf[:j], i+1), nil // CRLF
			default:
				return r.take(long, buf[:j], j+1), nil // a CR alone, before the LF
			}
		}
		if j := bytes.IndexByte(buf, '\r'); j >= 0 { // no LF buffered: a CR alone
			r.skipLF = j == len(buf)-1
			return r.take(long, buf[:j], j+1), nil
		}
		r.rd.Discard(r.used)
		r.used = 0
		if len(buf) == r.rd.Size() { // a very long line: gather it
			if len(long)+len(buf)+r.data.Len() > providers.MaxResponseBytes {
				return nil, ErrEventTooLarge
			}
			long = append(long, buf...)
			r.rd.Discard(len(buf))
			r.win = nil
			continue
		}
		_, err := r.rd.Peek(len(buf) + 1) // wait for more
		r.win, _ = r.rd.Peek(r.rd.Buffered())
		if err != nil {
			return r.take(long, r.win, len(r.win)), err
		}
	}
}

// take returns line, after long's start when there is one, and reads the n
// bytes of the window it and its end take.
func (r *Reader) take(long, line []byte, n int) []byte {
	if long != nil {
		line = append(long, line...)
	}
	r.win = r.win[n:]
	r.used += n
	return line
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
