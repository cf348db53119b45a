package codec

// Capture is a receive target for servers: the codec decodes into Msg and keeps a
// decode error in Err instead of returning it, so that the server can answer it as
// the caller's error (grpc-go answers any codec error as Internal, itself).
type Capture struct {
	Msg any
	Err error
}
