package server

// settling tells whether a method called through an interceptor chain that
// recovers panics ended without one: it ran to its end, or was never called
// (refused before it). A lent buffer is given back only then: after a panic a
// hedge's other attempt may still be reading it, and the garbage collector
// takes it instead.
type settling struct{ entered, returned bool }

// run calls f, noting that it was called and that it returned.
func (s *settling) run(f func()) {
	s.entered = true
	f()
	s.returned = true
}

// settled says that the method returned or never ran.
func (s *settling) settled() bool { return s.returned || !s.entered }
