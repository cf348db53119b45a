package openai

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sync"
)

// eventReader reads Server-Sent Events and returns each event's data.
type eventReader struct {
	rd   *bufio.Reader
	data bytes.Buffer
}

// next returns the data of the next event that has any; io.EOF at the end. An event
// cut off by the end of the stream (no blank line) is returned with
// io.ErrUnexpectedEOF, one longer than MaxResponseBytes with errEventTooLarge.
func (r *eventReader) next() ([]byte, error) {
	r.data.Reset()
	for {
		line, err := r.rd.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A very long line: gather the rest of it, up to the bound.
			full := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				if len(full)+r.data.Len() > MaxResponseBytes {
					return nil, errEventTooLarge
				}
				line, err = r.rd.ReadSlice('\n')
				full = append(full, line...)
			}
			line = full
		}
		if len(line)+r.data.Len() > MaxResponseBytes {
			return nil, errEventTooLarge
		}
		if err != nil {
			if len(line) > 0 || r.data.Len() > 0 {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			if r.data.Len() > 0 {
				return r.data.Bytes(), nil
			}
			continue
		}
		if rest, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			if r.data.Len() > 0 {
				r.data.WriteByte('\n')
			}
			r.data.Write(bytes.TrimPrefix(rest, []byte(" ")))
		}
		// Comments (":") and other fields (event, id, retry) carry nothing we use.
	}
}

var doneMarker = []byte("[DONE]")

// readers recycles the 32 KiB stream read buffers: one per stream would otherwise
// be most of the garbage a streaming request makes.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 32<<10) }}

func newReader(r io.Reader) *bufio.Reader {
	rd := readers.Get().(*bufio.Reader)
	rd.Reset(r)
	return rd
}

// putReader recycles rd; the stream that owned it must not read again (Close is
// called by the stream's owner only, and the stream reports done afterwards).
func putReader(rd *bufio.Reader) {
	if rd.Size() != 32<<10 {
		return // not one of ours
	}
	rd.Reset(nil)
	readers.Put(rd)
}

// pending reports whether a whole further event is already buffered, so that the
// next read will not wait for the upstream.
func (r *eventReader) pending() bool {
	n := r.rd.Buffered()
	if n == 0 {
		return false
	}
	b, _ := r.rd.Peek(n)
	i := bytes.Index(b, []byte("data:"))
	return i >= 0 && (bytes.Contains(b[i:], []byte("\n\n")) || bytes.Contains(b[i:], []byte("\r\n\r\n")))
}
