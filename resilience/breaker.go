package resilience

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrBreakerOpen is returned, without calling the upstream, while a breaker is open
// (or half-open with its probe in flight).
var ErrBreakerOpen = errors.New("circuit breaker is open")

// OpenError says which breaker refused the call and when a retry makes sense. It
// matches ErrBreakerOpen.
type OpenError struct {
	// Provider is the configured provider name.
	Provider string
	// Model is set for model-scoped breakers.
	Model string
	// RetryAfter is the time until the breaker lets a probe through.
	RetryAfter time.Duration
}

func (e *OpenError) Error() string {
	return fmt.Sprintf("circuit breaker is open - provider %s temporarily unavailable", e.Provider)
}

// Is matches ErrBreakerOpen.
func (e *OpenError) Is(target error) bool { return target == ErrBreakerOpen }

// State is a breaker's state.
type State int

const (
	// Closed lets every call through.
	Closed State = iota
	// HalfOpen lets one probe through at a time.
	HalfOpen
	// Open fails every call at once.
	Open
)

func (s State) String() string {
	return [...]string{"closed", "half-open", "open"}[s]
}

// Name is the breaker's provider and, for a model-scoped breaker, its model
// (empty with provider scope: every model of the provider shares it).
func (b *Breaker) Name() (provider, model string) { return b.provider, b.model }

// Breaker is one circuit breaker. It is safe for concurrent use.
type Breaker struct {
	settings BreakerSettings
	clock    Clock
	// provider and model name the breaker to its observer (model empty: provider scope).
	provider, model string
	obs             Observer

	mu    sync.Mutex
	state State
	// gen counts the breaker's periods: every transition, admin reset and trip starts
	// a new one. A call's result counts only in the period that admitted it, so a call
	// admitted while closed cannot re-open a half-open breaker, and a probe of an
	// earlier half-open period cannot close the current one (gobreaker's generation).
	gen       uint64
	failures  int // consecutive failures while closed
	successes int // consecutive probe successes while half-open
	openedAt  time.Time
	openFor   time.Duration
	probing   bool
	inflight  int
	lastUsed  time.Time
}

// NewBreaker returns a closed breaker.
func NewBreaker(s BreakerSettings, clock Clock) *Breaker {
	return &Breaker{settings: s, clock: clock, lastUsed: clock.Now(), obs: NopObserver{}}
}

// setState starts a new period in state to (with no probe out) and tells the
// observer if the state changed; callers hold mu.
func (b *Breaker) setState(to State) {
	b.gen++
	b.probing = false
	if from := b.state; from != to {
		b.state = to
		b.obs.BreakerTransition(b.provider, b.model, from, to)
	}
}

// permit is what allow hands out; done must be called with it exactly once.
type permit struct {
	probe bool
	// gen is the period that admitted the call.
	gen   uint64
	start time.Time
}

// allow admits a call or refuses it with an *OpenError (provider and model filled
// in by the caller).
func (b *Breaker) allow() (permit, time.Duration, bool) {
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lastUsed = now
	if !b.settings.Active() {
		b.inflight++
		return permit{gen: b.gen, start: now}, 0, true
	}
	switch b.state {
	case Open:
		if wait := b.openedAt.Add(b.openFor).Sub(now); wait > 0 {
			return permit{}, wait, false
		}
		b.setState(HalfOpen)
		b.successes = 0
		fallthrough
	case HalfOpen:
		if b.probing {
			return permit{}, b.probeWait(), false
		}
		b.probing = true
		b.inflight++
		return permit{probe: true, gen: b.gen, start: now}, 0, true
	}
	b.inflight++
	return permit{gen: b.gen, start: now}, 0, true
}

// probeWait is a hint for clients refused while a probe is in flight.
func (b *Breaker) probeWait() time.Duration { return max(time.Second, b.settings.Timeout/10) }

// done records a call's result: failure (including slow), success, or neither
// (cancelled). A result from an earlier period than the current one (see gen)
// changes nothing.
func (b *Breaker) done(p permit, k kind, o Outcome, elapsed time.Duration) {
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.inflight--
	b.lastUsed = now
	if p.gen != b.gen {
		return // stale: its period ended while it ran
	}
	if p.probe {
		b.probing = false
	}
	if !b.settings.Active() {
		return
	}
	v := b.verdict(k, o, elapsed)
	switch b.state {
	case Closed:
		switch v {
		case verdictFailure:
			b.failures++
			if b.failures >= b.settings.FailureThreshold {
				b.trip(now, b.settings.Timeout)
			}
		case verdictSuccess:
			b.failures = 0
		}
	case HalfOpen: // only the probe is admitted in a half-open period
		switch v {
		case verdictFailure:
			b.trip(now, b.settings.Timeout)
		case verdictSuccess:
			b.successes++
			if b.successes >= b.settings.SuccessThreshold {
				b.setState(Closed)
				b.failures, b.successes = 0, 0
			}
		}
	}
}

type verdict int

const (
	verdictNone verdict = iota
	verdictSuccess
	verdictFailure
)

// verdict decides what a result means to the breaker: transport errors, local
// timeouts, failure statuses and slow calls are failures; cancellations are nothing;
// other errors (e.g. 4xx) are not failures and count as success of the upstream.
func (b *Breaker) verdict(k kind, o Outcome, elapsed time.Duration) verdict {
	switch k {
	case kindCancelled:
		return verdictNone
	case kindTransport, kindTimeout:
		return verdictFailure
	case kindStatus:
		if b.settings.FailureOnStatuses.Has(o.UpstreamStatus()) {
			return verdictFailure
		}
		if oos, ok := o.(OutOfServiceOutcome); ok && oos.OutOfService() {
			return verdictFailure
		}
	}
	if t := b.settings.SlowCallThreshold; t > 0 && elapsed > t {
		return verdictFailure
	}
	return verdictSuccess
}

func (b *Breaker) trip(now time.Time, d time.Duration) {
	b.setState(Open)
	b.openedAt, b.openFor, b.failures, b.successes = now, d, 0, 0
}

// Snapshot is a breaker's state as the admin API shows it.
type Snapshot struct {
	State               State
	ConsecutiveFailures int
	OpenedAt            time.Time // zero unless open or half-open
	NextProbe           time.Time // zero unless open
	Settings            BreakerSettings
}

// Snapshot returns the current state.
func (b *Breaker) Snapshot() Snapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := Snapshot{State: b.state, ConsecutiveFailures: b.failures, Settings: b.settings}
	if b.state != Closed {
		s.OpenedAt = b.openedAt
	}
	if b.state == Open {
		s.NextProbe = b.openedAt.Add(b.openFor)
	}
	return s
}

// Reset forces the breaker closed with cleared counters.
func (b *Breaker) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.setState(Closed)
	b.failures, b.successes = 0, 0
}

// Trip forces the breaker open for d (0: the configured timeout).
func (b *Breaker) Trip(d time.Duration) {
	if d <= 0 {
		d = b.settings.Timeout
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.trip(b.clock.Now(), d)
}

// evictable reports whether an idle, closed breaker may be dropped.
func (b *Breaker) evictable(now time.Time, idle time.Duration) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state == Closed && b.inflight == 0 && now.Sub(b.lastUsed) >= idle
}

// idleClosed reports whether the breaker is closed with nothing in flight, and since when.
func (b *Breaker) idleClosed() (bool, time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state == Closed && b.inflight == 0, b.lastUsed
}
