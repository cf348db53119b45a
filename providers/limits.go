package providers

// MaxResponseBytes bounds what Switchyard reads of one upstream answer: a
// non-stream body, or one stream event. It is twice the default request body
// limit (server.max_body_bytes); a larger answer is unreadable (502), so a
// hostile or broken upstream cannot make the gateway buffer without end.
const MaxResponseBytes = 16 << 20

// MaxErrorBytes bounds what is read of an error status's body (only its message
// is kept, and at most 512 bytes of a body that has none).
const MaxErrorBytes = 1 << 20
