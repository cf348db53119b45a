package router

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/resilience"
)

// Observer hears routing events, for metrics.
type Observer interface {
	// Failover reports a move from one target to the next.
	Failover(from, to, reason string)
	// Empty reports a success with nothing in it (reason no_choices, empty_stream).
	Empty(provider, reason string)
	// Hidden reports an error hidden in a 200, with the status it was given.
	Hidden(provider string, status int)
}

type nopObserver struct{}

func (nopObserver) Failover(string, string, string) {}
func (nopObserver) Empty(string, string)            {}
func (nopObserver) Hidden(string, int)              {}

// Trace collects what happened to one request, for its log line.
type Trace struct {
	// Attempts counts upstream attempts, retries and failovers included.
	Attempts int64 // added atomically: a hedge's two sides count at once
	// Failovers counts moves to a backup target.
	Failovers int
	// Hedged is set when a second target was started beside a slow first one (hedge_after).
	Hedged bool
	// Resumes lists the targets a broken stream was continued on (stream_resume).
	Resumes []string
	// Cut lists, in order, the usage of each part of a stream that broke and was
	// continued elsewhere: its upstream billed it although another target finished
	// the answer. The last part's usage is the stream's own (summed with what the
	// cut parts reported, as the client sees it).
	Cut []CutUsage
	// Lost lists the usage of a hedge's losing side that answered anyway (its
	// answer was dropped, but its upstream billed it). A loser cancelled before it
	// answered is not here: what it was billed, if anything, is unknown.
	Lost []CutUsage
	// LastPart, set once Cut is not empty, reports the usage of the part that
	// ended the stream (ask it after the stream ended), like Cut's: its own if it
	// reported one, else estimated.
	LastPart func() CutUsage
	// Log, when the caller sets it, collects every attempt (the usage ledger's list).
	Log *AttemptLog
}

// CutUsage is what one cut part of a resumed stream used.
type CutUsage struct {
	Route Route
	// PromptTokens and CompletionTokens are what its upstream reported, or, when
	// it was cut before its usage (Estimated), the request it was sent and the
	// text it streamed at about four bytes a token (limits.BytesPerToken).
	PromptTokens, CompletionTokens int64
	Estimated                      bool
}

// bytesPerToken is limits.BytesPerToken (limits imports router).
const bytesPerToken = 4

func tokensOf(bytes int) int64 { return int64((max(bytes, 0) + bytesPerToken - 1) / bytesPerToken) }

// AttemptLog is the list of a request's upstream attempts, in the order they ended.
type AttemptLog struct {
	mu   sync.Mutex // a hedge's two sides end at once
	list []AttemptInfo
	// first backs list for the one or two attempts nearly every request makes.
	first [2]AttemptInfo
}

// AttemptInfo is one upstream attempt: its target, error (nil: success) and duration.
type AttemptInfo struct {
	Route   Route
	Err     error
	Latency time.Duration
}

// Each calls f with each attempt so far, in order, holding the log: f must
// not call back into it.
func (l *AttemptLog) Each(f func(AttemptInfo)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, a := range l.list {
		f(a)
	}
}

// attemptDone observes one upstream attempt: counts it, reports failures hidden
// behind a success, and logs every non-success at debug level: the request's own
// line (server) carries its attempts and failovers at info, so a failing upstream
// costs one line per request, not one per attempt.
func (r *Router) attemptDone(route Route, attempt int, err error, call Call, began time.Time) {
	if call.Trace != nil {
		atomic.AddInt64(&call.Trace.Attempts, 1) // a hedge's two sides count at once
		if l := call.Trace.Log; l != nil {
			l.mu.Lock()
			if l.list == nil {
				l.list = l.first[:0]
			}
			l.list = append(l.list, AttemptInfo{Route: route, Err: err, Latency: time.Since(began)})
			l.mu.Unlock()
		}
	}
	if err == nil {
		return
	}
	var pe *providers.Error
	kind := ""
	if errors.As(err, &pe) {
		switch pe.Kind {
		case providers.KindHiddenError:
			r.obs.Hidden(route.Provider, pe.Status)
		case providers.KindNoChoices, providers.KindEmptyStream:
			r.obs.Empty(route.Provider, pe.Kind)
		}
		kind = pe.Kind
	}
	if !r.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	r.log.LogAttrs(context.Background(), slog.LevelDebug, "upstream attempt failed", slog.String("provider", route.Provider),
		slog.String("model", route.Model), slog.Int("attempt", attempt+1), slog.String("kind", kind),
		slog.String("error", err.Error()), slog.String("request_id", call.RequestID))
}

// BreakerLog passes resilience events on to next and logs each circuit breaker
// state change, once per transition (never per request): opening at warn (calls
// to it now fail fast), half-open and closed at info. Transitions are reported
// under the breaker's lock, so this only writes one log record.
func BreakerLog(log *slog.Logger, next resilience.Observer) resilience.Observer {
	return breakerLog{log: log, Observer: next}
}

type breakerLog struct {
	log *slog.Logger
	resilience.Observer
}

func (b breakerLog) BreakerTransition(provider, model string, from, to resilience.State) {
	b.Observer.BreakerTransition(provider, model, from, to)
	level, msg := slog.LevelInfo, "circuit breaker closed"
	switch to {
	case resilience.Open:
		level, msg = slog.LevelWarn, "circuit breaker opened"
	case resilience.HalfOpen:
		msg = "circuit breaker half-open: letting a probe through"
	}
	b.log.LogAttrs(context.Background(), level, msg, slog.String("provider", provider), slog.String("model", model),
		slog.String("from", from.String()), slog.String("to", to.String()))
}

// failoverReason names why a chain moved on, with bounded values.
func failoverReason(err error, skipped bool) string {
	if errors.Is(err, ErrTargetSaturated) {
		return "target_saturated"
	}
	if pe := (*providers.Error)(nil); errors.As(err, &pe) && pe.Code == providers.CodeUnsupportedEndpoint {
		return "unsupported_endpoint"
	}
	if skipped {
		return "breaker_open"
	}
	var pe *providers.Error
	if errors.As(err, &pe) {
		switch {
		case pe.Transport:
			return "transport_error"
		case pe.Timeout:
			return "timeout"
		case pe.Status == 429:
			return "status_429"
		case pe.Status >= 500:
			return "status_" + strconv.Itoa(pe.Status/100) + "xx"
		}
	}
	return "error_match"
}
