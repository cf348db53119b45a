package config

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalid matches every *Error: the configuration cannot be used as written.
var ErrInvalid = errors.New("invalid configuration")

// Error is one problem in the configuration, told in the config file's own words:
// the key path, where it is, what is wrong and what was expected.
type Error struct {
	// Path is the key path, e.g. providers.a.timeout; empty for the file as a whole.
	Path string
	// Line is the 1-based line in the file; 0 when unknown.
	Line int
	// Env names the environment variable the value came from, if it did.
	Env string
	// Msg says what is wrong.
	Msg string
}

// Error reads "path (line N): msg", "line N: msg" or "path (from VAR): msg".
func (e *Error) Error() string {
	var where string
	switch {
	case e.Path != "" && e.Line > 0:
		where = fmt.Sprintf("%s (line %d)", e.Path, e.Line)
	case e.Line > 0:
		where = fmt.Sprintf("line %d", e.Line)
	case e.Path != "" && e.Env != "":
		where = fmt.Sprintf("%s (from %s)", e.Path, e.Env)
	case e.Env != "":
		where = e.Env
	default:
		where = e.Path
	}
	if where == "" {
		return e.Msg
	}
	return where + ": " + e.Msg
}

// Is matches ErrInvalid.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// problems is several *Error reported at once.
type problems []*Error

func (p problems) Error() string {
	lines := make([]string, len(p))
	for i, e := range p {
		lines[i] = "  " + e.Error()
	}
	return fmt.Sprintf("%d problems:\n%s", len(p), strings.Join(lines, "\n"))
}

func (p problems) Unwrap() []error {
	errs := make([]error, len(p))
	for i, e := range p {
		errs[i] = e
	}
	return errs
}

// join returns nil, the one problem, or all of them.
func join(errs []*Error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return problems(errs)
}
