package router

import (
	"errors"
	"strconv"
	"strings"

	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/resilience"
)

// defaultFailoverStatuses trigger failover by default: rate limits and server errors.
var defaultFailoverStatuses = []string{"429", "5xx"}

// defaultFailoverErrors are the phrases that trigger failover by default, whatever
// the status: the model (or its Azure deployment) is unavailable, unsupported or
// not found, the upstream
// reports a failure of its own upstream, or the request exceeds the model's
// context window (a backup may have a larger one). Content-policy rejections are
// not among them: routing around a refusal is not the gateway's call.
var defaultFailoverErrors = []string{
	"model not found", "model_not_found", "model does not exist", "no such model",
	"model unavailable", "model not available", "model is not available", "model is currently overloaded",
	"unsupported model", "model not supported", "model is not supported",
	"upstream request failed",
	"deploymentnotfound", // Azure: the model's deployment does not exist on that resource
	"context_length_exceeded", "maximum context length", "context window exceeded",
	"prompt is too long", "exceed context limit", // Anthropic's words for the same
}

// Failover says when a chain moves on to its next target.
type Failover struct {
	// Enabled turns failover on (the failover strategy always fails over).
	Enabled bool
	// Statuses are the statuses that fail over.
	Statuses resilience.StatusSet
	// Errors are phrases (see ParsePhrase) that fail over when they match.
	Errors []Phrase
	// MaxAttempts caps the backup targets tried; 0 = all of them.
	MaxAttempts int
}

// DefaultFailover is the built-in policy.
func DefaultFailover() Failover {
	f := Failover{Enabled: true, Statuses: resilience.MustStatusSet(defaultFailoverStatuses...)}
	for _, p := range defaultFailoverErrors {
		f.Errors = append(f.Errors, ParsePhrase(p))
	}
	return f
}

// Phrase is a retry_on_errors entry: every word must appear (case-insensitive
// substring) in the error's code or message, and numeric words ("404", "4xx")
// constrain the HTTP status instead.
type Phrase struct {
	words    []string
	statuses resilience.StatusSet
	status   bool
}

// ParsePhrase reads a phrase such as "404 deprecated" or "model not found".
func ParsePhrase(s string) Phrase {
	var p Phrase
	var statuses []string
	for _, w := range strings.Fields(strings.ToLower(s)) {
		if isStatusWord(w) {
			statuses = append(statuses, w)
			continue
		}
		p.words = append(p.words, w)
	}
	if len(statuses) > 0 {
		p.statuses, _ = resilience.ParseStatusSet(statuses)
		p.status = true
	}
	return p
}

func isStatusWord(w string) bool {
	if len(w) != 3 {
		return false
	}
	if strings.HasSuffix(w, "xx") {
		return w[0] >= '1' && w[0] <= '5'
	}
	n, err := strconv.Atoi(w)
	return err == nil && n >= 100 && n <= 599
}

// matches reports whether the phrase matches an error with this status, code and
// (lower-cased) message.
func (p Phrase) matches(status int, text string) bool {
	if p.status && !p.statuses.Has(status) {
		return false
	}
	if len(p.words) == 0 {
		return p.status
	}
	for _, w := range p.words {
		if !strings.Contains(text, w) {
			return false
		}
	}
	return true
}

// eligible reports whether err should move the chain to its next target, and
// whether the target was skipped without an upstream call (open breaker, or the
// target at its own limits).
func (f *Failover) eligible(err error) (move, skipped bool) {
	if notCalled(err) {
		return true, true
	}
	var pe *providers.Error
	if !errors.As(err, &pe) {
		return false, false
	}
	if f.Statuses.Has(pe.Status) {
		return true, false
	}
	text := strings.ToLower(pe.Code + " " + pe.Message)
	for _, p := range f.Errors {
		if p.matches(pe.Status, text) {
			return true, false
		}
	}
	return false, false
}
