package anthropicjson

import (
	"encoding/json"
	"slices"
	"strings"
)

// Extra holds a JSON object's members that its Go type does not model, by name,
// each exactly as it was on the wire. Types with an Extra field keep them when
// decoded and write them back (after the modelled members, sorted by name) when
// encoded, so unknown members survive a decode/encode round trip.
type Extra map[string]json.RawMessage

// splitExtra returns the members of the JSON object data whose names match none
// of known. encoding/json matches member names to fields case-insensitively, so
// a name equal to a known one but for case was consumed by a field and is not
// kept either. A non-object (or null) has no members.
func splitExtra(data []byte, known []string) (Extra, error) {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return nil, err
	}
	var extra Extra
	for name, v := range all {
		if slices.ContainsFunc(known, func(k string) bool { return strings.EqualFold(k, name) }) {
			continue
		}
		if extra == nil {
			extra = Extra{}
		}
		extra[name] = v
	}
	return extra, nil
}

// appendExtra writes extra's members into obj, the JSON encoding of an object,
// before its closing brace. Names obj already has are skipped: a modelled member
// wins over an unknown one of the same name.
func appendExtra(obj []byte, extra Extra) []byte {
	if len(extra) == 0 || len(obj) < 2 || obj[len(obj)-1] != '}' {
		return obj
	}
	var written map[string]json.RawMessage
	if err := json.Unmarshal(obj, &written); err != nil {
		return obj
	}
	names := make([]string, 0, len(extra))
	for name, v := range extra {
		if _, ok := written[name]; !ok && json.Valid(v) { // only a hand-built Extra holds invalid JSON
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return obj
	}
	slices.Sort(names)
	out := obj[:len(obj)-1]
	empty := len(written) == 0
	for _, name := range names {
		if !empty {
			out = append(out, ',')
		}
		empty = false
		key, _ := json.Marshal(name)
		out = append(out, key...)
		out = append(out, ':')
		out = append(out, extra[name]...)
	}
	return append(out, '}')
}
