package openaijson

import "fmt"

// Members reads data, which must be one JSON object (white space aside), and
// calls member with each of its members' names, as JSON means them (escapes
// read, invalid UTF-8 as U+FFFD), and where each value lies in data, in order.
// The whole input is checked as JSON, as json.Valid does, with nesting at most
// MaxDepth; an error is an *Error (ErrSyntax, ErrTooDeep, ErrNotObject) or
// member's own. One pass over the bytes, building nothing but the names.
func Members(data []byte, member func(name string, start, end int) error) error {
	s := scanner{data: data}
	if s.peek() != '{' {
		return failure(data, nil)
	}
	var own error
	err := s.object(func(key []byte) error {
		name := string(key)
		s.ws()
		start := s.pos
		if err := s.skip(); err != nil {
			return err
		}
		if err := member(name, start, s.pos); err != nil {
			own = err
			return err
		}
		return nil
	})
	switch {
	case own != nil:
		return own
	case err != nil:
		return failure(data, err)
	case !s.atEnd():
		return &Error{Msg: fmt.Sprintf("invalid JSON: data after the top-level object at byte %d", s.pos), Err: ErrSyntax, Offset: s.pos}
	}
	return nil
}
