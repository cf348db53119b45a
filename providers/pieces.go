package providers

import (
	"io"
	"slices"
)

// Pieces is a request body written in pieces, in order (openaijson.AppendPieces):
// a long conversation kept as it arrived is sent from the buffer it arrived in
// instead of being copied into one body first.
type Pieces [][]byte

// Len is the body's length in bytes.
func (p Pieces) Len() int64 {
	var n int64
	for _, b := range p {
		n += int64(len(b))
	}
	return n
}

// Reader reads the body from its start (each call a new reader: a retry sends
// it again).
func (p Pieces) Reader() io.ReadCloser {
	return &piecesReader{p: slices.Clone(p)} // its own headers: reading moves them
}

type piecesReader struct{ p Pieces }

func (r *piecesReader) Read(b []byte) (int, error) {
	n := 0
	for len(r.p) > 0 && n < len(b) {
		c := copy(b[n:], r.p[0])
		n += c
		if r.p[0] = r.p[0][c:]; len(r.p[0]) == 0 {
			r.p = r.p[1:]
		}
	}
	if n == 0 && len(r.p) == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// WriteTo writes what is left, piece by piece (io.Copy's fast path).
func (r *piecesReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for len(r.p) > 0 {
		n, err := w.Write(r.p[0])
		total += int64(n)
		if r.p[0] = r.p[0][n:]; len(r.p[0]) == 0 {
			r.p = r.p[1:]
		}
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

func (r *piecesReader) Close() error { return nil }
