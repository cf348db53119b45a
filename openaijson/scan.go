package openaijson

import (
	"errors"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// MaxDepth is the deepest nesting of arrays and objects any decoder here accepts
// (request, response, stream chunk, InspectChunk, unknown members kept as
// google.protobuf.Value): {"a":[1]} is nested 2 levels deep. Deeper input is
// refused with ErrTooDeep as soon as the scanner reaches the 129th opening
// bracket, so neither the stack nor the heap grows with the nesting. OpenAI's own
// shapes need fewer than 10 levels; JSON Schemas in tools and response_format
// rarely pass 30. (encoding/json's limit is 10000, protobuf-go's 10000 messages.)
const MaxDepth = 128

// The scanner's errors, turned into an *Error by the exported functions.
var (
	errSyntax  = errors.New("invalid JSON")
	errTooDeep = errors.New("JSON nested too deeply")
	// errTooManyValues is past the values budget (see newValue).
	errTooManyValues = errors.New("too many JSON values")
	errRange         = errors.New("number out of range")
)

// scanner is a single-pass JSON reader over a byte slice.
type scanner struct {
	data   []byte
	pos    int
	depth  int // arrays and objects open at pos
	values int // google.protobuf.Values built so far
	// lastMD and lastIx are the field index scanner.index looked up last.
	lastMD protoreflect.MessageDescriptor
	lastIx *fieldIndex
}

// The values budget bounds the memory one decode builds: a Value costs some 60-110
// bytes however short its JSON (`0,` is two), so a body of 8 MB of tiny values
// would otherwise become some 400 MB of Values. One decode builds at most
// ValuesFloor + len(input)/BytesPerValue of them (an 8 MB input: ~570 k, under 10x
// its size in allocations); past that it is ErrTooManyValues. Ordinary requests are
// far below it: a megabyte of dense tool schemas fits the floor alone, and text,
// images and logit_bias average well over 16 bytes a value.
const (
	ValuesFloor   = 1 << 16
	BytesPerValue = 16
)

// newValue counts one Value built, against the budget.
func (s *scanner) newValue() error {
	s.values++
	if s.values > ValuesFloor+len(s.data)/BytesPerValue {
		return errTooManyValues
	}
	return nil
}

// open enters an array or object (its bracket just read).
func (s *scanner) open() error {
	s.depth++
	if s.depth > MaxDepth {
		s.pos--
		return errTooDeep
	}
	return nil
}

func (s *scanner) ws() {
	for s.pos < len(s.data) {
		switch c := s.data[s.pos]; {
		case c > ' ': // most often: no space at all
			return
		case c == ' ', c == '\t', c == '\n', c == '\r':
			s.pos++
		default:
			return
		}
	}
}

// inString holds, for each byte, whether a string holds it as it is (not '"', a
// backslash or a control character); inKey also wants it ASCII.
var inString, inKey = func() (str, key [256]bool) {
	for c := 0x20; c < 256; c++ {
		str[c] = c != '"' && c != '\\'
		key[c] = str[c] && c < utf8.RuneSelf
	}
	return str, key
}()

// equalStr reports whether the next value is the string want written without
// escapes, in valid UTF-8 (so that it decodes to want), and reads it if so.
func (s *scanner) equalStr(want string) bool {
	if want == "" || s.peek() != '"' {
		return false
	}
	end := s.pos + 1 + len(want)
	if end >= len(s.data) || s.data[end] != '"' {
		return false
	}
	raw := s.data[s.pos+1 : end]
	if string(raw) != want {
		return false
	}
	high := false
	for _, c := range raw {
		if c == '"' || c == '\\' || c < 0x20 {
			return false
		}
		high = high || c >= utf8.RuneSelf
	}
	if high && !utf8.Valid(raw) {
		return false // decoding mends it: not want
	}
	s.pos = end + 1
	return true
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
				return mend(raw), nil
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
				return mend(buf), nil
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
				r = s.pair(r)
			}
			buf = utf8.AppendRune(buf, r)
		default:
			s.pos--
			return "", errSyntax
		}
	}
	return "", errSyntax
}

// pair completes the surrogate r with the \u escape that follows, as encoding/json
// does: a high and a low surrogate make one rune; anything else makes r U+FFFD and
// leaves what follows to be read on its own ("\ud83d\u0041" is "\uFFFDA").
func (s *scanner) pair(r rune) rune {
	next := s.pos
	if s.literal(`\u`) {
		if r2, ok := s.hex4(); ok {
			if dec := utf16.DecodeRune(r, r2); dec != unicode.ReplacementChar {
				return dec
			}
		}
	}
	s.pos = next
	return unicode.ReplacementChar
}

// mend replaces each byte of b that is not part of valid UTF-8 with U+FFFD, as
// encoding/json does (strings.ToValidUTF8 would merge a run into one).
func mend(b []byte) string {
	out := make([]byte, 0, len(b)+8)
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		out = utf8.AppendRune(out, r) // RuneError, size 1, for an invalid byte
		b = b[size:]
	}
	return string(out)
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
func (s *scanner) skip() error { return s.walk(false) }

// checkValue is skip that also refuses numbers past float64's range, as
// scanner.value does: it checks every unknown member (kept in extra).
func (s *scanner) checkValue() error { return s.walk(true) }

// walk reads past any value, checking its syntax and, with inRange, that every
// number fits a float64.
func (s *scanner) walk(inRange bool) error {
	switch s.peek() {
	case '{':
		return s.object(func([]byte) error { return s.walk(inRange) })
	case '[':
		return s.array(func(int) error { return s.walk(inRange) })
	case '"':
		return s.skipStr()
	case 't':
		return s.lit("true")
	case 'f':
		return s.lit("false")
	case 'n':
		return s.lit("null")
	}
	num, err := s.number()
	if err != nil || !inRange || shortNumber(num) {
		return err
	}
	if _, err := strconv.ParseFloat(string(num), 64); err != nil {
		return errRange
	}
	return nil
}

// skipStr reads past a string (the opening quote is next). Bytes of any value
// pass, as str lets them (it mends invalid UTF-8, never rejects it); escapes are
// checked by str itself.
func (s *scanner) skipStr() error {
	i := s.pos + 1
	for i < len(s.data) && inString[s.data[i]] {
		i++
	}
	switch {
	case i >= len(s.data):
		return errSyntax
	case s.data[i] == '"':
		s.pos = i + 1
		return nil
	case s.data[i] == '\\':
		_, err := s.str()
		return err
	}
	return errSyntax // a control character
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
	i := start
	for i < len(s.data) && inKey[s.data[i]] {
		i++
	}
	if i < len(s.data) && s.data[i] == '"' {
		s.pos = i + 1
		return s.data[start:i], nil
	}
	k, err := s.str() // escapes, non-ASCII, or no end
	return []byte(k), err
}

// object calls member for each key of an object (the '{' is next). The key slice
// is only valid during the call.
func (s *scanner) object(member func(key []byte) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if err := s.open(); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.pos++
		s.depth--
		return nil
	}
	return s.members(member)
}

// members is object's loop over the members from the next key on, to the
// object's end (an object whose '{' and first members were read before).
func (s *scanner) members(member func(key []byte) error) error {
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
			s.depth--
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
	if err := s.open(); err != nil {
		return err
	}
	if s.peek() == ']' {
		s.pos++
		s.depth--
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
			s.depth--
			return nil
		default:
			return errSyntax
		}
	}
}
