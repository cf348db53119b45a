package server

import (
	"errors"
	"io"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/proto"

	"github.com/switchyard/switchyard/openaijson"
)

// jsonMarshaler is grpc-gateway's marshaler for REST: OpenAI-shaped JSON through
// openaijson (numbers as numbers, unknown members kept).
type jsonMarshaler struct{}

var _ runtime.Marshaler = jsonMarshaler{}

var errNotProto = errors.New("openai json: value is not a proto message")

func (jsonMarshaler) Marshal(v any) ([]byte, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, errNotProto
	}
	return openaijson.Marshal(m), nil
}

func (jsonMarshaler) Unmarshal(data []byte, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return errNotProto
	}
	return openaijson.Unmarshal(data, m)
}

func (j jsonMarshaler) NewDecoder(r io.Reader) runtime.Decoder {
	return runtime.DecoderFunc(func(v any) error {
		data, err := io.ReadAll(r)
		if err != nil {
			return err
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
