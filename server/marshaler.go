package server

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/switchyard/switchyard/openaijson"
)

// jsonMarshaler is grpc-gateway's marshaler for REST: OpenAI-shaped JSON through
// openaijson (numbers as numbers, unknown members kept) for the OpenAI surface,
// and protojson for the admin API, so that its REST JSON is exactly what grpcurl
// prints and sends (zero values left out, enums by name, unknown fields refused).
// log hears a decoder's panic (see Unmarshal).
type jsonMarshaler struct{ log *slog.Logger }

var _ runtime.Marshaler = jsonMarshaler{}

var errNotProto = errors.New("openai json: value is not a proto message")

// adminPackage prefixes the admin API's message names.
const adminPackage = "switchyard.admin."

var (
	adminOut = protojson.MarshalOptions{}
	adminIn  = protojson.UnmarshalOptions{}
)

func isAdmin(m proto.Message) bool {
	return strings.HasPrefix(string(m.ProtoReflect().Descriptor().FullName()), adminPackage)
}

func (jsonMarshaler) Marshal(v any) ([]byte, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, errNotProto
	}
	if isAdmin(m) {
		return adminOut.Marshal(m)
	}
	return openaijson.Marshal(m), nil
}

// Unmarshal decodes a REST body for grpc-gateway, which runs it before the
// chain: under decodeSafely, a decoder's panic is the caller's 500, logged.
func (j jsonMarshaler) Unmarshal(data []byte, v any) error {
	m, ok := messageOf(v)
	if !ok {
		return errNotProto
	}
	return decodeSafely(j.log, "decoding a REST body", func() error {
		if isAdmin(m) {
			return adminIn.Unmarshal(data, m)
		}
		return openaijson.Unmarshal(data, m)
	})
}

// messageOf finds the message to decode into: v itself, or, for a binding whose
// body is one message field (grpc-gateway passes &req.Field, a **T), the field,
// allocated when nil.
func messageOf(v any) (proto.Message, bool) {
	if m, ok := v.(proto.Message); ok {
		return m, true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Pointer {
		return nil, false
	}
	field := rv.Elem()
	if _, ok := field.Interface().(proto.Message); !ok {
		return nil, false
	}
	if field.IsNil() {
		field.Set(reflect.New(field.Type().Elem()))
	}
	m, ok := field.Interface().(proto.Message)
	return m, ok
}

func (j jsonMarshaler) NewDecoder(r io.Reader) runtime.Decoder {
	return runtime.DecoderFunc(func(v any) error {
		data, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(data)) == 0 {
			return io.EOF // no body: grpc-gateway leaves the request empty
		}
		return j.Unmarshal(data, v)
	})
}

func (j jsonMarshaler) NewEncoder(w io.Writer) runtime.Encoder {
	return runtime.EncoderFunc(func(v any) error {
		b, err := j.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	})
}

func (jsonMarshaler) ContentType(any) string { return "application/json" }

func (jsonMarshaler) Delimiter() []byte { return []byte("\n") }
