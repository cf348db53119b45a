package openaijson

import (
	"errors"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// errType is a well-formed value of the wrong type for its member; the checker
// does not say which member (the decoder does, when asked).
var errType = errors.New("wrong type")

// The check functions judge a member's JSON as the generic decoder (decoder.field
// and scanner.value) would decode it, without building anything: null for any
// known field, or a value of its type. InspectChunk walks a chunk with them, and
// FuzzInspectChunk holds it to UnmarshalChunk's verdict.

// checkStr: a string field.
func (s *scanner) checkStr() error {
	switch s.peek() {
	case 'n':
		return s.lit("null")
	case '"':
		return s.skipStr()
	}
	return errType
}

// checkInt: an integer field of kind k; n is its value (0 for null).
func (s *scanner) checkInt(k protoreflect.Kind) (n int64, err error) {
	switch c := s.peek(); {
	case c == 'n':
		return 0, s.lit("null")
	case c != '-' && (c < '0' || c > '9'):
		return 0, errType
	}
	num, err := s.number()
	if err != nil {
		return 0, err
	}
	if n, ok := smallInt(num); ok && (n == int64(int32(n)) || k == protoreflect.Int64Kind) {
		return n, nil // the common case: a plain integer, in range
	}
	v, msg := integer(num, k)
	if msg != "" {
		return 0, errType
	}
	return v.Int(), nil
}

// checkStruct: a google.protobuf.Struct field.
func (s *scanner) checkStruct() error {
	switch s.peek() {
	case 'n':
		return s.lit("null")
	case '{':
		return s.checkValue()
	}
	return errType
}

// checkObject: a message field, whose members member checks.
func (s *scanner) checkObject(member func(key []byte) error) error {
	switch s.peek() {
	case 'n':
		return s.lit("null")
	case '{':
		return s.object(member)
	}
	return errType
}

// checkList: a repeated message field, whose elements (objects, never null) item
// checks.
func (s *scanner) checkList(item func() error) error {
	switch s.peek() {
	case 'n':
		return s.lit("null")
	case '[':
		return s.array(func(int) error {
			if s.peek() != '{' {
				return errType
			}
			return item()
		})
	}
	return errType
}

// shortNumber reports whether num (well-formed) is surely within float64's range:
// no exponent and too few digits to reach 1.8e308.
func shortNumber(num []byte) bool {
	if len(num) > 300 {
		return false
	}
	for _, c := range num {
		if c == 'e' || c == 'E' {
			return false
		}
	}
	return true
}
