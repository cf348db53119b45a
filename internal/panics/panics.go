// Package panics carries a panic from where it was recovered, with nothing
// there to answer for it (a goroutine of its own, a decoder run before the
// interceptor chain), to where a recovery does, which raises it again.
package panics

import (
	"fmt"
	"runtime/debug"
)

// Carried is a recovered panic: its value, what was running, and the stack it
// was raised on (the recovery that answers for it logs its own too).
type Carried struct {
	Value any
	While string
	Stack []byte
}

// Carry is called in the deferred function that recovered v, while running
// what while says.
func Carry(v any, while string) *Carried {
	return &Carried{Value: v, While: while, Stack: debug.Stack()}
}

func (p *Carried) String() string {
	return fmt.Sprintf("%v (while %s)\n%s", p.Value, p.While, p.Stack)
}

// Error lets it travel where an error does; it is raised, never answered.
func (p *Carried) Error() string { return p.String() }
