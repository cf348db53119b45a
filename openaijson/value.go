package openaijson

import (
	"strconv"

	"google.golang.org/protobuf/types/known/structpb"
)

// value reads any JSON value as a google.protobuf.Value. A number past float64's
// range is errRange (as encoding/json refuses it for an any).
func (s *scanner) value() (*structpb.Value, error) {
	if err := s.newValue(); err != nil {
		return nil, err
	}
	switch s.peek() {
	case '{':
		st, err := s.structValue()
		if err != nil {
			return nil, err
		}
		return &structpb.Value{Kind: &structpb.Value_StructValue{StructValue: st}}, nil
	case '[':
		l := &structpb.ListValue{}
		err := s.array(func(int) error {
			v, err := s.value()
			if err != nil {
				return err
			}
			l.Values = append(l.Values, v)
			return nil
		})
		if err != nil {
			return nil, err
		}
		return &structpb.Value{Kind: &structpb.Value_ListValue{ListValue: l}}, nil
	case '"':
		str, err := s.str()
		if err != nil {
			return nil, err
		}
		return &structpb.Value{Kind: &structpb.Value_StringValue{StringValue: str}}, nil
	case 't':
		return &structpb.Value{Kind: &structpb.Value_BoolValue{BoolValue: true}}, s.lit("true")
	case 'f':
		return &structpb.Value{Kind: &structpb.Value_BoolValue{BoolValue: false}}, s.lit("false")
	case 'n':
		return &structpb.Value{Kind: &structpb.Value_NullValue{}}, s.lit("null")
	}
	num, err := s.number()
	if err != nil {
		return nil, err
	}
	f, err := strconv.ParseFloat(string(num), 64)
	if err != nil {
		return nil, errRange // well-formed, but past float64 (1e400)
	}
	return &structpb.Value{Kind: &structpb.Value_NumberValue{NumberValue: f}}, nil
}

// structValue reads a JSON object as a google.protobuf.Struct.
func (s *scanner) structValue() (*structpb.Struct, error) {
	st := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	err := s.object(func(key []byte) error {
		v, err := s.value()
		if err != nil {
			return err
		}
		st.Fields[string(key)] = v
		return nil
	})
	return st, err
}
