package router

import (
	"errors"
	"strconv"

	"github.com/switchyard/switchyard/providers"
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

// SetObserver sets who hears routing events (call before serving).
func (r *Router) SetObserver(o Observer) { r.obs = o }

// Trace collects what happened to one request, for its log line.
type Trace struct {
	// Attempts counts upstream attempts, retries and failovers included.
	Attempts int
	// Failovers counts moves to a backup target.
	Failovers int
}

// attemptDone observes one upstream attempt: counts it, reports failures hidden
// behind a success, and logs every non-success.
func (r *Router) attemptDone(route Route, attempt int, err error, call Call) {
	if call.Trace != nil {
		call.Trace.Attempts++
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
	r.log.Warn("upstream attempt failed", "provider", route.Provider, "model", route.Model, "attempt", attempt+1,
		"kind", kind, "error", err.Error(), "request_id", call.RequestID)
}

// failoverReason names why a chain moved on, with bounded values.
func failoverReason(err error, skipped bool) string {
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
