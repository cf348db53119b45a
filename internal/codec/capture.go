package codec

import "github.com/switchyard/switchyard/internal/bufpool"

// Capture is a receive target for servers: the codec decodes into Msg and keeps a
// decode error in Err instead of returning it, so that the server can answer it as
// the caller's error (grpc-go answers any codec error as Internal, itself).
//
// With Lend, a long chat request's conversation is transcoded into a buffer lent
// by bufpool (not one allocated, and cleared, for each request): Ref is that
// lending, the zero Ref for none. The receiver holds it from then on and lets go
// of it when it is done with the request (messages_json points into it); each
// upstream body sending from it holds it too (bufpool.With, Pieces.ReaderOf).
type Capture struct {
	Msg  any
	Err  error
	Lend bool
	Ref  bufpool.Ref
}
