package resilience

// Observer hears what the resilience layer does, for metrics and logs. Methods are
// called synchronously on the request path (breaker transitions under the
// breaker's lock): implementations must be fast and must not call back.
type Observer interface {
	// Attempt reports one upstream attempt's outcome: success, retryable_status,
	// status, transport_error, timeout or cancelled.
	Attempt(provider, model, outcome string)
	// Retry reports that a retry was scheduled.
	Retry(provider, model string)
	// BreakerTransition reports a state change (model is empty for provider scope).
	BreakerTransition(provider, model string, from, to State)
}

// NopObserver hears nothing.
type NopObserver struct{}

// Attempt does nothing.
func (NopObserver) Attempt(string, string, string) {}

// Retry does nothing.
func (NopObserver) Retry(string, string) {}

// BreakerTransition does nothing.
func (NopObserver) BreakerTransition(string, string, State, State) {}

// outcome names an attempt's result for observers.
func outcome(s RetrySettings, k kind, o Outcome) string {
	switch k {
	case kindSuccess:
		return "success"
	case kindCancelled:
		return "cancelled"
	case kindTransport:
		return "transport_error"
	case kindTimeout:
		return "timeout"
	case kindStatus:
		if s.retryable(k, o) {
			return "retryable_status"
		}
	}
	return "status"
}
