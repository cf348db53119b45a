package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

var varPattern = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// Expand replaces ${VAR} and ${VAR:-default} using lookup. An unset VAR without a
// default becomes the empty string.
func Expand(text string, lookup func(string) (string, bool)) string {
	return varPattern.ReplaceAllStringFunc(text, func(m string) string {
		sub := varPattern.FindStringSubmatch(m)
		if v, ok := lookup(sub[1]); ok && v != "" {
			return v
		}
		return sub[3]
	})
}

// Load reads path (empty: no file) and the environment, applies defaults, and validates.
func Load(path string, env func(string) (string, bool)) (*Config, error) {
	cfg := &Config{}
	if path != "" {
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		if err := Parse(raw, env, cfg); err != nil {
			return nil, fmt.Errorf("config %s: %w", path, err)
		}
	}
	if err := applyEnv(cfg, env); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	applyDefaults(cfg)
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return cfg, nil
}

// Parse expands variables in raw and decodes it strictly into cfg: unknown keys and
// wrong types are errors naming the key path.
func Parse(raw []byte, env func(string) (string, bool), cfg *Config) error {
	text := Expand(string(raw), env)
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(text), &root); err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader([]byte(text)))
	dec.KnownFields(true)
	err := dec.Decode(cfg)
	if err == nil || errors.Is(err, io.EOF) {
		return nil
	}
	return withPaths(err, &root)
}

var linePattern = regexp.MustCompile(`line (\d+): (.*)`)

// withPaths rewrites yaml.v3's "line N: ..." messages to lead with the key path.
func withPaths(err error, root *yaml.Node) error {
	var msgs []string
	for _, line := range strings.Split(err.Error(), "\n") {
		m := linePattern.FindStringSubmatch(line)
		if m == nil {
			if s := strings.TrimSpace(line); s != "" && s != "yaml: unmarshal errors:" {
				msgs = append(msgs, s)
			}
			continue
		}
		n, _ := strconv.Atoi(m[1])
		if p := pathAtLine(root, n, ""); p != "" {
			msgs = append(msgs, fmt.Sprintf("%s (line %d): %s", p, n, m[2]))
		} else {
			msgs = append(msgs, fmt.Sprintf("line %d: %s", n, m[2]))
		}
	}
	return errors.New(strings.Join(msgs, "; "))
}

// pathAtLine finds the dotted key path of the first key or item on line.
func pathAtLine(n *yaml.Node, line int, prefix string) string {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if p := pathAtLine(c, line, prefix); p != "" {
				return p
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if prefix != "" {
				p = prefix + "." + k.Value
			}
			if q := pathAtLine(v, line, p); q != "" {
				return q
			}
			if k.Line == line {
				return p
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := fmt.Sprintf("%s[%d]", prefix, i)
			if c.Kind == yaml.ScalarNode && c.Line == line {
				return p
			}
			if q := pathAtLine(c, line, p); q != "" {
				return q
			}
		}
	}
	return ""
}
