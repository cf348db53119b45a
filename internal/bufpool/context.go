package bufpool

import "context"

type refKey struct{}

// With returns ctx carrying r, the lending of the buffer the request's body
// arrived in: what reads from that buffer after the handler may have returned
// holds it first.
func With(ctx context.Context, r Ref) context.Context {
	if r.l == nil {
		return ctx
	}
	return context.WithValue(ctx, refKey{}, r)
}

// From is the Ref ctx carries, or the zero Ref.
func From(ctx context.Context) Ref {
	r, _ := ctx.Value(refKey{}).(Ref)
	return r
}
