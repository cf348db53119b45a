package providers

import (
	"context"
	"sync"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
)

// RawAnswers lets a caller that writes OpenAI's wire (the REST chat front) have
// a non-stream answer's bytes as the upstream sent them, instead of the answer
// decoded into a proto and encoded again. A provider on that wire that finds the
// answer complete (openaijson.InspectCompletion) returns a proto holding only
// what Switchyard reads of it (usage, choices, id and model) and keeps the bytes
// here under that proto; the caller takes the bytes of the answer it got back
// (a hedge's or a failed-over attempt's other answers are never taken). Safe
// for concurrent attempts.
type RawAnswers struct {
	mu      sync.Mutex
	answers []rawAnswer
}

type rawAnswer struct {
	answer *pb.ChatCompletion
	body   []byte
}

type rawAnswersKey struct{}

// WithRawAnswers asks the providers of calls under ctx to keep raw answers in r.
func WithRawAnswers(ctx context.Context, r *RawAnswers) context.Context {
	return context.WithValue(ctx, rawAnswersKey{}, r)
}

// RawAnswersOf is the RawAnswers of ctx, nil when its caller wants protos only.
func RawAnswersOf(ctx context.Context) *RawAnswers {
	r, _ := ctx.Value(rawAnswersKey{}).(*RawAnswers)
	return r
}

// Keep notes that answer's bytes are body (which the caller must not change).
func (r *RawAnswers) Keep(answer *pb.ChatCompletion, body []byte) {
	r.mu.Lock()
	r.answers = append(r.answers, rawAnswer{answer, body})
	r.mu.Unlock()
}

// Take returns the bytes kept for answer, if a provider kept them.
func (r *RawAnswers) Take(answer *pb.ChatCompletion) ([]byte, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range r.answers {
		if a.answer == answer {
			return a.body, true
		}
	}
	return nil, false
}
