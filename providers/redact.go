package providers

import (
	"bytes"
	"io"
	"net/url"
	"slices"
	"strings"
)

// minSecret is the shortest secret redacted: shorter strings would mangle
// ordinary words of a message and are no credential worth the name.
const minSecret = 8

// Secrets are the strings no error may carry to a client: an upstream may echo
// them (a key in its message, a header value, the base URL's password).
type Secrets []string

// SecretsOf lists what an upstream might echo that must never leave the process:
// the keys (API key, bearer token), the configured header values (Azure's
// api-key, anthropic-beta, ...) and the base URL's userinfo password. Longest
// first, so that a secret containing another goes whole.
func SecretsOf(baseURL string, headers map[string]string, keys ...string) Secrets {
	var out Secrets
	add := func(s string) {
		if len(s) >= minSecret && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, k := range keys {
		add(k)
	}
	for _, v := range headers {
		add(v)
	}
	if u, err := url.Parse(baseURL); err == nil && u.User != nil {
		p, _ := u.User.Password()
		add(p)
		add(u.User.String())
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// Redact removes every secret from every string of e a client can see (message,
// type, code, param: the REST body, the gRPC status message and its ErrorInfo
// reason and metadata are all made of these). Keys never leave the process.
func (s Secrets) Redact(e *Error) *Error {
	e.Message = s.String(e.Message)
	e.Type = s.String(e.Type)
	e.Code = s.String(e.Code)
	e.Param = s.String(e.Param)
	return e
}

// redacted is what a secret becomes.
const redacted = "[redacted]"

// String is str with every secret replaced by "[redacted]".
func (s Secrets) String(str string) string {
	for _, k := range s {
		str = strings.ReplaceAll(str, k, redacted)
	}
	return str
}

// Reader is r with every secret replaced by "[redacted]" as it is read, for a
// body of any length in bounded memory: what could still begin a secret (the
// longest secret's length less a byte) is held back until more arrives or r
// ends, so that a secret split between two reads is found whole. r's error is
// returned once everything before it was. r itself when there are no secrets.
func (s Secrets) Reader(r io.Reader) io.Reader {
	hold := 0
	for _, k := range s {
		hold = max(hold, len(k)-1)
	}
	if len(s) == 0 {
		return r
	}
	keys := make([][]byte, len(s))
	for i, k := range s {
		keys[i] = []byte(k)
	}
	return &redactReader{keys: keys, r: r, hold: hold}
}

// redactReader is Secrets.Reader's.
type redactReader struct {
	keys [][]byte
	r    io.Reader
	hold int
	in   []byte // read from r, not yet redacted: at most hold bytes between reads
	out  []byte // redacted, not yet returned (the unread end of buf)
	buf  []byte
	err  error // r's, returned once in and out are empty
}

// redactChunk is how much a redactReader reads from r at a time.
const redactChunk = 32 << 10

func (x *redactReader) Read(p []byte) (int, error) {
	for len(x.out) == 0 {
		if x.err != nil {
			if len(x.in) == 0 {
				return 0, x.err
			}
			x.redact(true)
			break
		}
		x.in = slices.Grow(x.in, redactChunk)
		n, err := x.r.Read(x.in[len(x.in) : len(x.in)+redactChunk])
		x.in, x.err = x.in[:len(x.in)+n], err
		if n > 0 {
			x.redact(false)
		}
	}
	n := copy(p, x.out)
	x.out = x.out[n:]
	return n, nil
}

// redact moves to out what of in no secret can still begin in (all of it at
// r's end), each secret in it replaced. A secret beginning before safe ends
// within in: secrets are at most hold+1 bytes long.
func (x *redactReader) redact(end bool) {
	safe := len(x.in) - x.hold
	if end {
		safe = len(x.in)
	}
	out, i := x.buf[:0], 0
	for i < safe {
		at, n := x.next(i)
		if at < 0 || at >= safe {
			out, i = append(out, x.in[i:safe]...), safe
			break
		}
		out = append(append(out, x.in[i:at]...), redacted...)
		i = at + n
	}
	x.in = x.in[:copy(x.in, x.in[i:])]
	x.buf, x.out = out, out
}

// next is where the first secret in in from i begins and its length (the
// longest of those beginning there); -1 when none does.
func (x *redactReader) next(i int) (at, n int) {
	at = -1
	for _, k := range x.keys {
		j := bytes.Index(x.in[i:], k)
		if j >= 0 && (at < 0 || i+j < at || (i+j == at && len(k) > n)) {
			at, n = i+j, len(k)
		}
	}
	return at, n
}
