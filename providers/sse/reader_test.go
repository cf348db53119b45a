package sse

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/providers"
)

type event struct{ typ, data string }

func readEvents(t *testing.T, in string, size int) ([]event, error) {
	t.Helper()
	r := Buffered(bufio.NewReaderSize(strings.NewReader(in), size))
	var out []event
	for {
		ev, err := r.Next()
		if err != nil {
			return out, err
		}
		out = append(out, event{ev.Type, string(ev.Data)})
	}
}

func TestReaderEvents(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   string
		want []event
		err  error
	}{
		{"openai data only", "data: {\"a\":1}\n\ndata: [DONE]\n\n", []event{{"", `{"a":1}`}, {"", "[DONE]"}}, io.EOF},
		{"anthropic framing", "event: message_start\ndata: {\"type\":\"message_start\"}\n\nevent: ping\ndata: {\"type\": \"ping\"}\n\n",
			[]event{{"message_start", `{"type":"message_start"}`}, {"ping", `{"type": "ping"}`}}, io.EOF},
		{"unknown type", "event: novel_event\ndata: {}\n\n", []event{{"novel_event", "{}"}}, io.EOF},
		{"type without a space", "event:error\ndata:{}\n\n", []event{{"error", "{}"}}, io.EOF},
		{"crlf", "event: ping\r\ndata: x\r\n\r\n", []event{{"ping", "x"}}, io.EOF},
		{"several data lines", "data: a\ndata: b\n\n", []event{{"", "a\nb"}}, io.EOF},
		{"comments and other fields skipped", ": hi\nid: 3\nretry: 10\ndata: x\n\n", []event{{"", "x"}}, io.EOF},
		{"a type without data is not dispatched", "event: ping\n\ndata: x\n\n", []event{{"", "x"}}, io.EOF},
		{"type does not leak into the next event", "event: ping\ndata: x\n\ndata: y\n\n", []event{{"ping", "x"}, {"", "y"}}, io.EOF},
		{"cut event", "event: message_stop\ndata: {", nil, io.ErrUnexpectedEOF},
		{"cut before the blank line", "data: x\n", nil, io.ErrUnexpectedEOF},
		{"long line through a small buffer", "data: " + strings.Repeat("z", 100) + "\n\n", []event{{"", strings.Repeat("z", 100)}}, io.EOF},
		{"too large", "data: " + strings.Repeat("z", providers.MaxResponseBytes) + "\n\n", nil, ErrEventTooLarge},
		{"a leading BOM is ignored", "\xEF\xBB\xBFdata: {\"a\":1}\n\ndata: [DONE]\n\n", []event{{"", `{"a":1}`}, {"", "[DONE]"}}, io.EOF},
		{"a leading BOM before a long first line", "\xEF\xBB\xBFdata: " + strings.Repeat("z", 100) + "\n\n", []event{{"", strings.Repeat("z", 100)}}, io.EOF},
		{"a leading BOM before the type", "\xEF\xBB\xBFevent: ping\ndata: x\n\n", []event{{"ping", "x"}}, io.EOF},
		{"only one leading BOM is ignored", "\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\ndata: y\n\n", []event{{"", "y"}}, io.EOF},
		{"a BOM after the start is not ignored", "data: x\n\n\xEF\xBB\xBFdata: y\n\n", []event{{"", "x"}}, io.EOF},
		{"cr", "event: ping\rdata: x\r\rdata: y\r\r", []event{{"ping", "x"}, {"", "y"}}, io.EOF},
		{"cr, several data lines", "data: a\rdata: b\r\r", []event{{"", "a\nb"}}, io.EOF},
		{"cr, a long line through a small buffer", "data: " + strings.Repeat("z", 100) + "\r\r", []event{{"", strings.Repeat("z", 100)}}, io.EOF},
		{"cr, a leading BOM", "\xEF\xBB\xBFdata: x\r\r", []event{{"", "x"}}, io.EOF},
		{"cr, cut before the blank line", "data: x\r", nil, io.ErrUnexpectedEOF},
		{"mixed line ends", "data: a\rdata: b\ndata: c\r\n\r\ndata: d\n\r", []event{{"", "a\nb\nc"}, {"", "d"}}, io.EOF},
		{"cr then crlf is two line ends", "data: a\r\r\ndata: b\n\n", []event{{"", "a"}, {"", "b"}}, io.EOF},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := readEvents(t, tc.in, 16)
			require.ErrorIs(t, err, tc.err)
			require.Equal(t, tc.want, got)
		})
	}
}

// splitReader returns its pieces one per Read, then blocks until release is
// closed (an upstream that has sent them and waits), then ends.
type splitReader struct {
	pieces  []string
	release chan struct{}
}

func (s *splitReader) Read(p []byte) (int, error) {
	if len(s.pieces) == 0 {
		<-s.release
		return 0, io.EOF
	}
	n := copy(p, s.pieces[0])
	if s.pieces[0] = s.pieces[0][n:]; s.pieces[0] == "" {
		s.pieces = s.pieces[1:]
	}
	return n, nil
}

// TestReaderLineEndsAcrossReads: a CR that ends one read and an LF that starts
// the next are one CRLF, not two line ends; and an event whose blank line ends
// in a CR is returned without waiting for the upstream's next bytes.
func TestReaderLineEndsAcrossReads(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		pieces []string
		want   []event
	}{
		{"crlf split inside an event", []string{"data: a\r", "\ndata: b\r\n\r\n"}, []event{{"", "a\nb"}}},
		{"crlf split after the type", []string{"event: ping\r", "\ndata: x\r\n\r\n"}, []event{{"ping", "x"}}},
		{"crlf split at the blank line", []string{"data: a\r\n\r", "\ndata: b\r\n\r\n"}, []event{{"", "a"}, {"", "b"}}},
		{"crlf split at the 16-byte buffer's end", []string{"data: 123456789\r\ndata: 2\r\n\r\n"}, []event{{"", "123456789\n2"}}},
		{"cr, the upstream then waits", []string{"data: a\r\r"}, []event{{"", "a"}}},
		{"crlf whose last lf has not come", []string{"data: a\r\n\r"}, []event{{"", "a"}}},
		{"a BOM split across reads", []string{"\xEF", "\xBB", "\xBFdata: a\n\n"}, []event{{"", "a"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := &splitReader{pieces: tc.pieces, release: make(chan struct{})}
			defer close(src.release)
			r := Buffered(bufio.NewReaderSize(src, 16))
			got := make(chan []event, 1)
			go func() {
				var out []event
				for range tc.want {
					ev, err := r.Next()
					if err != nil {
						break
					}
					out = append(out, event{ev.Type, string(ev.Data)})
				}
				got <- out
			}()
			select {
			case out := <-got:
				require.Equal(t, tc.want, out)
			case <-time.After(5 * time.Second):
				t.Fatal("Next waited for bytes after a whole event")
			}
		})
	}
}

func TestReaderPending(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   string
		want bool
	}{
		{"a whole event buffered", "data: a\n\ndata: b\n\n", true},
		{"the next event is partial", "data: a\n\ndata: b", false},
		{"nothing more", "data: a\n\n", false},
		{"crlf", "data: a\r\n\r\nevent: ping\r\ndata: b\r\n\r\n", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := NewReader(strings.NewReader(tc.in))
			defer r.Release()
			_, err := r.Next()
			require.NoError(t, err)
			require.Equal(t, tc.want, r.Pending())
		})
	}
}

// TestReaderReleased: a released reader reads nothing more (its buffer may serve
// another stream already).
func TestReaderReleased(t *testing.T) {
	r := NewReader(strings.NewReader("data: a\n\ndata: b\n\n"))
	_, err := r.Next()
	require.NoError(t, err)
	r.Release()
	r.Release() // twice is harmless
	require.False(t, r.Pending())
	_, err = r.Next()
	require.True(t, errors.Is(err, io.EOF))
}

// TestReaderAllocatesNothing: reading an event, typed by a known type or not typed
// at all, allocates nothing once the buffer has grown (the relay's hot path).
func TestReaderAllocatesNothing(t *testing.T) {
	for _, ev := range []string{
		"data: {\"choices\":[]}\n\n",
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\"}\n\n",
	} {
		const runs = 200
		r := Buffered(bufio.NewReaderSize(strings.NewReader(strings.Repeat(ev, runs+2)), 32<<10))
		_, err := r.Next()
		require.NoError(t, err)
		got := testing.AllocsPerRun(runs, func() {
			if _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
		})
		require.Zero(t, got, ev)
	}
}

// FuzzReader: how the stream's bytes arrive (one per read through a 16-byte
// buffer, or all at once through the pooled size) never changes the events read
// or how the stream ends: a CR that ends one read and an LF that starts the next
// are one line end.
func FuzzReader(f *testing.F) {
	for _, seed := range []string{"data: a\r\ndata: b\r\n\r\n", "data: a\rdata: b\r\r", "\xEF\xBB\xBFdata: x\n\n", "event: ping\r\n\rdata: x\n\r\n", "data: x\r"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		read := func(r Reader) ([]event, error) {
			var out []event
			for {
				ev, err := r.Next()
				if err != nil {
					return out, err
				}
				out = append(out, event{ev.Type, string(ev.Data)})
			}
		}
		whole, wholeErr := read(Buffered(bufio.NewReaderSize(bytes.NewReader(data), bufSize)))
		split, splitErr := read(Buffered(bufio.NewReaderSize(iotest.OneByteReader(bytes.NewReader(data)), 16)))
		require.Equal(t, whole, split)
		require.Equal(t, wholeErr, splitErr)
	})
}
