package openaijson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

type member struct {
	name  string
	value string
}

// membersOracle is what encoding/json reads of an object's members, in order.
func membersOracle(data []byte) ([]member, bool) {
	if !json.Valid(data) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var out []member
	for dec.More() {
		tok, _ := dec.Token()
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, false
		}
		out = append(out, member{tok.(string), string(raw)})
	}
	if _, err := dec.Token(); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, false
	}
	return out, true
}

func membersOf(data []byte) ([]member, error) {
	var out []member
	err := Members(data, func(name string, start, end int) error {
		out = append(out, member{name, string(data[start:end])})
		return nil
	})
	return out, err
}

func TestMembers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		err      error
	}{
		{name: "members in order", in: ` {"model": "m", "n":1.5e3 ,"s":"a\"b\\","o":{"x":[1,{"y":null}]},"a":[true,false]} `},
		{name: "escaped and repeated names", in: `{"\u006dodel":"a","model":"b"}`},
		{name: "empty object", in: `{}`},
		{name: "not an object", in: `[1]`, err: ErrNotObject},
		{name: "not JSON", in: `{"model":`, err: ErrSyntax},
		{name: "empty", in: ``, err: ErrSyntax},
		{name: "data after the object", in: `{} {}`, err: ErrSyntax},
		{name: "too deep", in: `{"a":` + strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1) + `}`, err: ErrTooDeep},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := membersOf([]byte(tc.in))
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			want, ok := membersOracle([]byte(tc.in))
			require.True(t, ok)
			require.Equal(t, want, got)
		})
	}
}

// FuzzMembers holds Members to encoding/json: the same members, names and value
// bytes, for every object encoding/json reads (but those nested past MaxDepth),
// and an error for everything else.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{`{"model":"m","messages":[{"role":"user","content":"hi"}]}`, `{"a\u0000":"\ud800"}`, `{"x":1e999}`, `[]`, `{`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := membersOf(data)
		want, ok := membersOracle(data)
		if !ok {
			require.Error(t, err, "encoding/json refuses %q", data)
			return
		}
		if errors.Is(err, ErrTooDeep) {
			return
		}
		require.NoError(t, err, "%q", data)
		require.Equal(t, want, got)
	})
}
