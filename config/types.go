package config

import (
	"fmt"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// Secret is a string that never shows up in logs or formatted output.
type Secret string

// String redacts the secret.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "[redacted]"
}

// GoString redacts the secret in %#v.
func (s Secret) GoString() string { return strconv.Quote(s.String()) }

// MarshalYAML redacts the secret when the config is dumped.
func (s Secret) MarshalYAML() (any, error) { return s.String(), nil }

// StatusList is a list of HTTP statuses: numbers (429) or classes ("5xx").
type StatusList []string

// UnmarshalYAML accepts a sequence of numbers and strings.
func (l *StatusList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.SequenceNode {
		return fmt.Errorf("line %d: expected a list of statuses", n.Line)
	}
	out := make(StatusList, 0, len(n.Content))
	for _, c := range n.Content {
		if c.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: expected a status", c.Line)
		}
		out = append(out, c.Value)
	}
	*l = out
	return nil
}

// UnmarshalYAML accepts `failover: true|false` as well as the block.
func (f *Failover) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		var b bool
		if err := n.Decode(&b); err != nil {
			return fmt.Errorf("line %d: failover must be a boolean or a block", n.Line)
		}
		f.Enabled = &b
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: failover must be a boolean or a block", n.Line)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		switch k := n.Content[i]; k.Value {
		case "enabled", "retry_on_statuses", "retry_on_errors", "max_attempts":
		default:
			return fmt.Errorf("line %d: unknown key %q", k.Line, k.Value)
		}
	}
	type plain Failover
	return n.Decode((*plain)(f))
}

// UnmarshalYAML accepts `stream_resume: true|false` as well as the block.
func (r *StreamResume) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		var b bool
		if err := n.Decode(&b); err != nil {
			return fmt.Errorf("line %d: stream_resume must be a boolean or a block", n.Line)
		}
		r.Enabled = &b
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: stream_resume must be a boolean or a block", n.Line)
	}
	type plain StreamResume
	return n.Decode((*plain)(r))
}

// On reports whether recovery is enabled.
func (r *StreamResume) On() bool { return r != nil && (r.Enabled == nil || *r.Enabled) }

// Max is the number of resumes allowed (default 1); 0 when recovery is off.
func (r *StreamResume) Max() int {
	switch {
	case !r.On():
		return 0
	case r.MaxResumes == nil:
		return 1
	}
	return *r.MaxResumes
}
