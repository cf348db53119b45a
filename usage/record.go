// Package usage is Switchyard's usage ledger: one Record per answered request
// (tokens, cost, attempts, timing, outcome — never prompt or completion text),
// priced from a price table, handed to a bounded asynchronous Writer that batches
// records into a Store (SQLite by default, Postgres for several replicas, or none),
// and queried through the admin API. A request never waits on the ledger: a full
// queue drops the record and counts it.
package usage

import (
	"encoding/json"
	"math"
	"strconv"
	"time"
	"unsafe"
)

// Surfaces and endpoints a record names.
const (
	SurfaceREST = "rest"
	SurfaceGRPC = "grpc"

	EndpointChat       = "chat"
	EndpointMessages   = "messages"
	EndpointEmbeddings = "embeddings"
	// EndpointCountTokens is /v1/messages/count_tokens (nothing billed).
	EndpointCountTokens = "count_tokens"
	// EndpointPassthrough is /p/{provider}/...: no model, no tokens, its target
	// the provider.
	EndpointPassthrough = "passthrough"
)

// Record is what one request did, written once after its answer ended (stream or
// not). It holds no prompt or completion text.
type Record struct {
	// Time is when the request arrived.
	Time time.Time
	// RequestID is the request's x-request-id.
	RequestID string
	// Surface is "rest" or "grpc"; Endpoint is "chat", "messages" or "embeddings".
	Surface, Endpoint string
	// Stream is set for streamed answers.
	Stream bool
	// KeyID names the caller's key (a key id, never the key): the virtual key's id,
	// "master:xxxxxxxx" for the master key, "anonymous" without keys.
	KeyID string
	// Model is the model as asked; VirtualModel is set when it named a virtual model.
	Model, VirtualModel string
	// Provider and TargetModel are the final target (that answered, or failed last).
	Provider, TargetModel string
	// Attempts lists every upstream attempt, in the order they ended.
	Attempts []Attempt
	// Failovers counts moves to a backup target; Resumes the targets a broken
	// stream was continued on; Hedged is set when a backup was started beside a slow
	// first target.
	Failovers, Resumes int
	Hedged             bool
	// Tokens are the upstream's usage (Estimated when it reported none).
	Tokens Tokens
	// CostUSD is the price of Tokens; nil when the target has no price.
	CostUSD *float64
	// Latency is the whole request; TTFT the time to the first streamed event (0: none).
	Latency, TTFT time.Duration
	// Status is the HTTP status the caller got (200 for a stream that started);
	// ErrorCode the error's code ("" on success; for a stream that broke, the reason).
	Status    int
	ErrorCode string
}

// Attempt is one upstream attempt of a request.
type Attempt struct {
	// Target is "provider/model".
	Target string `json:"t"`
	// Outcome is "ok" or the failure's kind (status, timeout, transport_error,
	// cancelled, breaker_open, target_saturated, ...).
	Outcome string `json:"o"`
	// Status is the upstream's HTTP status (0: none, e.g. a transport error).
	Status int `json:"s,omitempty"`
	// Latency is the attempt's duration.
	Latency time.Duration `json:"-"`
	// LatencyMS is Latency in milliseconds, the stored form.
	LatencyMS float64 `json:"ms"`
	// Tokens is set on the attempts of a stream that was cut on one target and
	// continued on another: each part was billed by its own upstream, and CostUSD
	// prices it at its own target's price (nil: no price). The record's Tokens
	// are their sum.
	Tokens  *Tokens  `json:"tk,omitempty"`
	CostUSD *float64 `json:"c,omitempty"`
}

// Failed is whether the request ended in an error.
func (r *Record) Failed() bool { return r.Status >= 400 || r.ErrorCode != "" }

// encodeAttempts is the compact stored form of the attempts list: what
// json.Marshal writes for it, written by hand for the attempts nearly every
// record has (plain target and outcome, no tokens of their own), which was the
// writer's largest cost after SQLite's own.
func encodeAttempts(as []Attempt) string {
	if len(as) == 0 {
		return "[]"
	}
	for i := range as {
		as[i].LatencyMS = millis(as[i].Latency)
	}
	b := make([]byte, 1, 48*len(as)+2)
	b[0] = '['
	for i, a := range as {
		if a.Tokens != nil || a.CostUSD != nil || !plainJSON(a.Target) || !plainJSON(a.Outcome) ||
			(a.LatencyMS != 0 && (a.LatencyMS < 1e-6 || a.LatencyMS >= 1e21)) {
			return marshalAttempts(as)
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(append(b, `{"t":"`...), a.Target...), `","o":"`...)
		b = append(append(b, a.Outcome...), '"')
		if a.Status != 0 {
			b = strconv.AppendInt(append(b, `,"s":`...), int64(a.Status), 10)
		}
		b = append(strconv.AppendFloat(append(b, `,"ms":`...), a.LatencyMS, 'f', -1, 64), '}')
	}
	b = append(b, ']')
	return unsafe.String(&b[0], len(b)) // b is not written again
}

// marshalAttempts is json.Marshal(as). Its only failure is a cost that is not a
// number (prices are checked finite, so none is expected): such an attempt is
// stored without its cost rather than the list being lost.
func marshalAttempts(as []Attempt) string {
	if b, err := json.Marshal(as); err == nil {
		return string(b)
	}
	clean := append([]Attempt(nil), as...)
	for i := range clean {
		if c := clean[i].CostUSD; c != nil && (math.IsNaN(*c) || math.IsInf(*c, 0)) {
			clean[i].CostUSD = nil
		}
	}
	b, _ := json.Marshal(clean) // plain structs, finite numbers: cannot fail
	return string(b)
}

// plainJSON is whether json.Marshal writes s as it is, between quotes.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7F || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

func decodeAttempts(s string) []Attempt {
	var as []Attempt
	if json.Unmarshal([]byte(s), &as) != nil {
		return nil
	}
	for i := range as {
		as[i].Latency = time.Duration(as[i].LatencyMS * float64(time.Millisecond))
	}
	return as
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
