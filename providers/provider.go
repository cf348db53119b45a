// Package providers defines what Switchyard needs from an upstream: chat, streaming
// chat and model discovery, with errors that say what went wrong in terms the
// resilience layer and the error boundary can act on. One sub-package per wire format.
package providers

import (
	"context"
	"net/http"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/openaijson"
)

// Attempt is what every upstream call carries, whatever its endpoint kind: the
// router builds one per target it tries, and the endpoint's own body travels
// beside it (Request for chat; each other kind's method takes its own).
type Attempt struct {
	// Model is the provider-local model name ("gpt-4o", not "openai/gpt-4o").
	Model string
	// IdempotencyKey, when valid, is forwarded as the Idempotency-Key header.
	IdempotencyKey string
	// RequestID is forwarded as X-Request-Id.
	RequestID string
	// IncludeUsage asks the upstream for a usage chunk even if the client did not.
	IncludeUsage bool
	// Betas are the client's anthropic-beta values (the /v1/messages surface):
	// providers on Anthropic's wire send them beside their configured ones, so a
	// client's opt-in features reach the upstream; others ignore them.
	Betas []string
}

// Request is one upstream chat call.
type Request struct {
	// Body is the client's request. Providers must not modify it: failover reuses it.
	Body *pb.ChatCompletionRequest
	Attempt
}

// Provider is an upstream.
type Provider interface {
	// Name is the configured provider name.
	Name() string
	// Chat returns one complete chat completion.
	Chat(ctx context.Context, req *Request) (*pb.ChatCompletion, error)
	// Stream sends a streaming request and returns once the first event has arrived,
	// so that failures before it are plain errors (and can fail over).
	Stream(ctx context.Context, req *Request) (Stream, error)
	// Models lists the models the upstream serves (provider-local names).
	Models(ctx context.Context) ([]string, error)
}

// Stream is an open upstream stream.
type Stream interface {
	// Recv returns the next chunk. It returns io.EOF after the final event, and an
	// error wrapping ErrStreamIncomplete when the stream stops before it.
	Recv() (*pb.ChatCompletionChunk, error)
	// Close releases the upstream connection; safe to call more than once.
	Close() error
}

// Pender is implemented by streams that can tell whether their next chunk is
// already at hand; writers use it to flush once per burst instead of per chunk.
type Pender interface {
	Pending() bool
}

// RawStream is implemented by streams that can relay chunks exactly as the
// upstream sent them, inspected but not decoded (the REST pass-through).
type RawStream interface {
	// NextRaw returns the next chunk; it ends like Recv (io.EOF, or an error
	// wrapping ErrStreamIncomplete). A stream is read with Recv or with NextRaw,
	// not both.
	NextRaw() (RawChunk, error)
}

// RawChunk is one chunk as a relay sees it.
type RawChunk struct {
	// Bytes is the chunk as the upstream sent it, valid until the next NextRaw.
	Bytes []byte
	// Info says what the chunk holds.
	Info openaijson.ChunkInfo
	// Decoded is the chunk decoded and normalised (missing members filled in) when
	// Bytes cannot be relayed as is (Info.Complete is false); nil otherwise.
	Decoded *pb.ChatCompletionChunk
}

// Messenger is implemented by providers that speak Anthropic's Messages API
// natively. A /v1/messages body reaches them as the client sent it; they send it
// with only its model rewritten to a.Model (and what Anthropic would refuse of
// another model's turns left out: anthropicjson.PrepareNative), so nothing
// Anthropic-specific is lost; other providers get the same request translated
// to chat.
type Messenger interface {
	// Messages returns the upstream's answer body (a complete message).
	Messages(ctx context.Context, a Attempt, body []byte) ([]byte, error)
	// StreamMessages sends a streaming request and returns once the first event
	// that carries content has arrived, as Stream does.
	StreamMessages(ctx context.Context, a Attempt, body []byte) (EventStream, error)
}

// TokenCounter is implemented by Messengers that count a Messages request's input
// tokens natively (Anthropic's POST /v1/messages/count_tokens). The body is the
// client's, sent as Messenger sends it; the answer is the upstream's
// body ({"input_tokens": N}). The /v1/messages/count_tokens surface answers 404
// for a target without it.
type TokenCounter interface {
	CountTokens(ctx context.Context, a Attempt, body []byte) ([]byte, error)
}

// Event is one Server-Sent Event as the upstream framed it.
type Event struct {
	// Type is the event's "event:" field (Anthropic's event type).
	Type string
	// Data is the event's data, valid until the next Next.
	Data []byte
}

// EventStream is an open upstream stream of wire-native events.
type EventStream interface {
	// Next returns the next event. It returns io.EOF after the final event, and an
	// error wrapping ErrStreamIncomplete when the stream stops before it.
	Next() (Event, error)
	// Close releases the upstream connection; safe to call more than once.
	Close() error
}

// CodeUnsupportedEndpoint is the code of the 400 a target answers for an
// endpoint kind its provider does not serve (no Embedder, no Messenger for
// count_tokens, ...). A chain skips such a target, as it skips an open breaker:
// it was never called.
const CodeUnsupportedEndpoint = "unsupported_endpoint"

// Embedder is implemented by providers that serve embeddings (OpenAI's POST
// /embeddings). A provider without it answers an embeddings call with a 400
// naming it (code CodeUnsupportedEndpoint), from the server.
type Embedder interface {
	// Embed returns one embedding per input. req is the client's request; the
	// provider sends it with its model replaced by a.Model and must not modify it
	// (failover reuses it).
	Embed(ctx context.Context, a Attempt, req *pb.CreateEmbeddingsRequest) (*pb.CreateEmbeddingsResponse, error)
}

// Passthrough is implemented by providers that can forward an arbitrary HTTP
// request under their base URL (/p/{provider}/{path...}): the provider sets the
// URL, Host and its own credentials; the caller has already removed the client's
// credentials and hop-by-hop headers. Forward returns the upstream's response
// whatever its status (the caller closes its body); an error means no response
// arrived (a *Error with Transport or Timeout set). The answer is as the
// upstream sent it: the caller redacts Secrets from what it relays.
type Passthrough interface {
	// Forward sends r (its URL path and query relative to the base URL) upstream.
	Forward(ctx context.Context, a Attempt, r *http.Request) (*http.Response, error)
	// Secrets are what of the provider's credentials an upstream might echo
	// (see SecretsOf).
	Secrets() Secrets
}
