package openaijson

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// errSyntax is any JSON syntax error; callers report it without a param.
var errSyntax = errors.New("invalid JSON")

// scanner is a single-pass JSON reader over a byte slice.
type scanner struct {
	data []byte
	pos  int
}

func (s *scanner) ws() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// atEnd reports whether only white space is left.
func (s *scanner) atEnd() bool {
	s.ws()
	return s.pos >= len(s.data)
}

// peek returns the next non-space byte (0 at the end).
func (s *scanner) peek() byte {
	s.ws()
	if s.pos < len(s.data) {
		return s.data[s.pos]
	}
	return 0
}

func (s *scanner) expect(c byte) error {
	if s.peek() != c {
		return errSyntax
	}
	s.pos++
	return nil
}

func (s *scanner) literal(lit string) bool {
	if len(s.data)-s.pos >= len(lit) && string(s.data[s.pos:s.pos+len(lit)]) == lit {
		s.pos += len(lit)
		return true
	}
	return false
}

// str reads a JSON string (the opening quote is next).
func (s *scanner) str() (string, error) {
	if s.peek() != '"' {
		return "", errSyntax
	}
	s.pos++
	start := s.pos
	high := false
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			raw := s.data[start:s.pos]
			s.pos++
			if high && !utf8.Valid(raw) {
				return strings.ToValidUTF8(string(raw), "\uFFFD"), nil
			}
			return string(raw), nil
		case c >= utf8.RuneSelf:
			high = true
		case c == '\\':
			return s.strSlow(start)
		case c < 0x20:
			return "", errSyntax
		}
		s.pos++
	}
	return "", errSyntax
}

// strSlow decodes a string with escapes, starting over at start.
func (s *scanner) strSlow(start int) (string, error) {
	buf := make([]byte, 0, s.pos-start+16)
	buf = append(buf, s.data[start:s.pos]...)
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			s.pos++
			if !utf8.Valid(buf) {
				return strings.ToValidUTF8(string(buf), "\uFFFD"), nil
			}
			return string(buf), nil
		case c < 0x20:
			return "", errSyntax
		case c != '\\':
			buf = append(buf, c)
			s.pos++
			continue
		}
		s.pos++
		if s.pos >= len(s.data) {
			return "", errSyntax
		}
		e := s.data[s.pos]
		s.pos++
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := s.hex4()
			if !ok {
				return "", errSyntax
			}
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if s.literal(`\u`) {
					r2, ok = s.hex4()
					if !ok {
						return "", errSyntax
					}
				}
				r = utf16.DecodeRune(r, r2)
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return "", errSyntax
		}
	}
	return "", errSyntax
}

func (s *scanner) hex4() (rune, bool) {
	if len(s.data)-s.pos < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(s.data[s.pos:s.pos+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	s.pos += 4
	return rune(n), true
}

// number reads a JSON number and returns its text.
func (s *scanner) number() ([]byte, error) {
	s.ws()
	start := s.pos
	if s.pos < len(s.data) && s.data[s.pos] == '-' {
		s.pos++
	}
	digits := func() int {
		n := 0
		for s.pos < len(s.data) && s.data[s.pos] >= '0' && s.data[s.pos] <= '9' {
			s.pos++
			n++
		}
		return n
	}
	intStart := s.pos
	if n := digits(); n == 0 || (n > 1 && s.data[intStart] == '0') {
		return nil, errSyntax // no digits, or a leading zero
	}
	if s.pos < len(s.data) && s.data[s.pos] == '.' {
		s.pos++
		if digits() == 0 {
			return nil, errSyntax
		}
	}
	if s.pos < len(s.data) && (s.data[s.pos] == 'e' || s.data[s.pos] == 'E') {
		s.pos++
		if s.pos < len(s.data) && (s.data[s.pos] == '+' || s.data[s.pos] == '-') {
			s.pos++
		}
		if digits() == 0 {
			return nil, errSyntax
		}
	}
	return s.data[start:s.pos], nil
}

// skip reads past any value, checking its syntax, without allocating (but for
// strings with escapes).
func (s *scanner) skip() error {
	switch s.peek() {
	case '{':
		return s.object(func([]byte) error { return s.skip() })
	case '[':
		return s.array(func(int) error { return s.skip() })
	case '"':
		return s.skipStr()
	case 't':
		return s.lit("true")
	case 'f':
		return s.lit("false")
	case 'n':
		return s.lit("null")
	}
	_, err := s.number()
	return err
}

// skipStr reads past a string (the opening quote is next). Bytes of any value
// pass, as str lets them (it mends invalid UTF-8, never rejects it); escapes are
// checked by str itself.
func (s *scanner) skipStr() error {
	for i := s.pos + 1; i < len(s.data); i++ {
		switch c := s.data[i]; {
		case c == '"':
			s.pos = i + 1
			return nil
		case c == '\\':
			_, err := s.str()
			return err
		case c < 0x20:
			return errSyntax
		}
	}
	return errSyntax
}

func (s *scanner) lit(l string) error {
	if !s.literal(l) {
		return errSyntax
	}
	return nil
}

// key reads an object key without allocating when it has no escapes.
func (s *scanner) key() ([]byte, error) {
	if s.peek() != '"' {
		return nil, errSyntax
	}
	start := s.pos + 1
	for i := start; i < len(s.data); i++ {
		switch c := s.data[i]; {
		case c == '"':
			s.pos = i + 1
			return s.data[start:i], nil
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			k, err := s.str()
			return []byte(k), err
		}
	}
	return nil, errSyntax
}

// object calls member for each key of an object (the '{' is next). The key slice
// is only valid during the call.
func (s *scanner) object(member func(key []byte) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.pos++
		return nil
	}
	for {
		key, err := s.key()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := member(key); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return nil
		default:
			return errSyntax
		}
	}
}

// array calls item for each element of an array (the '[' is next).
func (s *scanner) array(item func(i int) error) error {
	if err := s.expect('['); err != nil {
		return err
	}
	if s.peek() == ']' {
		s.pos++
		return nil
	}
	for i := 0; ; i++ {
		if err := item(i); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return nil
		default:
			return errSyntax
		}
	}
}
