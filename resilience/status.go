package resilience

import (
	"fmt"
	"strconv"
	"strings"
)

// StatusSet is a set of upstream statuses given as exact codes ("429") and classes
// ("5xx"). The zero value matches nothing.
type StatusSet struct {
	codes   map[int]bool
	classes [6]bool // classes[5] is 5xx
}

// ParseStatusSet reads entries such as "429", "5xx". An empty list gives an empty set.
func ParseStatusSet(entries []string) (StatusSet, error) {
	var s StatusSet
	for _, e := range entries {
		e = strings.ToLower(strings.TrimSpace(e))
		if len(e) == 3 && strings.HasSuffix(e, "xx") && e[0] >= '1' && e[0] <= '5' {
			s.classes[e[0]-'0'] = true
			continue
		}
		n, err := strconv.Atoi(e)
		if err != nil || n < 100 || n > 599 {
			return StatusSet{}, fmt.Errorf("invalid status %q: want a code 100-599 or a class like 5xx", e)
		}
		if s.codes == nil {
			s.codes = map[int]bool{}
		}
		s.codes[n] = true
	}
	return s, nil
}

// MustStatusSet is ParseStatusSet for literals known to be valid.
func MustStatusSet(entries ...string) StatusSet {
	s, err := ParseStatusSet(entries)
	if err != nil {
		panic(err)
	}
	return s
}

// Has reports whether code is in the set.
func (s StatusSet) Has(code int) bool {
	if s.codes[code] {
		return true
	}
	c := code / 100
	return c >= 1 && c <= 5 && s.classes[c]
}
