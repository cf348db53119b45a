package config

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
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

// Load reads path (empty: no file) and the environment, applies defaults, and
// validates. Every problem is reported at once as an *Error (matching ErrInvalid)
// with its key path and line.
func Load(path string, env func(string) (string, bool)) (*Config, error) {
	cfg := &Config{}
	where, lines := "config", map[string]int{}
	var keyErrs keyErrors
	if path != "" {
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		where = "config " + path
		if lines, err = parse(raw, env, cfg); err != nil {
			var ke keyErrors
			if !errors.As(err, &ke) {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			keyErrs = ke // reported with the values' own problems below: all at once
		}
	}
	origins, envErrs := applyEnv(cfg, env)
	if len(envErrs) > 0 {
		return nil, fmt.Errorf("config: %w", join(envErrs))
	}
	applyDefaults(cfg)
	if errs := append(keyErrs, besides(cfg.problems(), keyErrs)...); len(errs) > 0 {
		for _, e := range errs {
			locate(e, lines, origins)
		}
		slices.SortStableFunc(errs, func(a, b *Error) int { return cmp.Compare(lineOrLast(a), lineOrLast(b)) })
		return nil, fmt.Errorf("%s: %w", where, join(errs))
	}
	return cfg, nil
}

// keyErrors are the keys the checker refused (unknown, of the wrong kind):
// Load reports them with the values' own problems.
type keyErrors []*Error

func (k keyErrors) Error() string { return join(k).Error() }

// besides drops the problems of what a refused key left unread: the key
// itself (a wrong kind is read as its default), and the whole list element it
// is in (a block that does not decode leaves its element empty: "source is
// required" would be no problem of the file's).
func besides(errs []*Error, refused keyErrors) []*Error {
	out := errs[:0]
	for _, e := range errs {
		if !slices.ContainsFunc(refused, func(r *Error) bool { return r.Path != "" && under(e.Path, unread(r.Path)) }) {
			out = append(out, e)
		}
	}
	return out
}

// unread is what a refusal at path leaves unread: its list element, if it is
// in one ("virtual_models[0]"), else the key.
func unread(path string) string {
	if i := strings.LastIndexByte(path, ']'); i >= 0 {
		return path[:i+1]
	}
	return path
}

// under reports whether path is at or below prefix.
func under(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+".") || strings.HasPrefix(path, prefix+"[")
}

// locate adds the line of e's key (or of its nearest enclosing key) in the file,
// or the environment variable its value came from.
func locate(e *Error, lines map[string]int, origins map[string]string) {
	if v, ok := origins[e.Path]; ok {
		e.Env = v
		return
	}
	for p := e.Path; p != "" && e.Line == 0; p = parentPath(p) {
		e.Line = lines[p]
	}
}

func lineOrLast(e *Error) int {
	if e.Line == 0 {
		return math.MaxInt
	}
	return e.Line
}

func parentPath(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i < 0 {
		return ""
	}
	return p[:i]
}

// Parse expands variables in raw and decodes it strictly into cfg: unknown keys,
// values of the wrong kind and YAML syntax errors are *Error values naming the key
// path and line, all of them at once.
func Parse(raw []byte, env func(string) (string, bool), cfg *Config) error {
	_, err := parse(raw, env, cfg)
	return err
}

// parse is Parse that also returns the line of every key path.
func parse(raw []byte, env func(string) (string, bool), cfg *Config) (map[string]int, error) {
	text := Expand(string(raw), env)
	var root yaml.Node
	dec := yaml.NewDecoder(strings.NewReader(text))
	if err := dec.Decode(&root); err != nil && !errors.Is(err, io.EOF) {
		return nil, syntaxError(string(raw), text, err)
	}
	var next yaml.Node
	if err := dec.Decode(&next); err == nil {
		return nil, &Error{Line: next.Line, Msg: "a second YAML document (after ---) would be ignored: keep one document per file"}
	}
	c := &checker{lines: map[string]int{}}
	c.document(&root)
	if len(c.errs) > 0 {
		// What has the right kind is still read, so that the values' own
		// problems are found with these (a wrong kind is left at its default).
		_ = yaml.NewDecoder(strings.NewReader(text)).Decode(cfg)
		return c.lines, keyErrors(c.errs)
	}
	strict := yaml.NewDecoder(strings.NewReader(text))
	strict.KnownFields(true)
	if err := strict.Decode(cfg); err != nil && !errors.Is(err, io.EOF) {
		return c.lines, fallback(err, &root)
	}
	return c.lines, nil
}

var (
	yamlLine   = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	yamlPrefix = regexp.MustCompile(`^yaml: (?:line \d+: )?`)
	// syntaxHelp says in plain words what the YAML parser's messages mean.
	syntaxHelp = []struct{ yaml, plain string }{
		{"did not find expected key", "this line does not line up with the keys above it (check its indentation, or a missing ':')"},
		{"did not find expected '-' indicator", "this list item does not line up with the items above it (check its indentation)"},
		{"mapping values are not allowed in this context", "unexpected ':' (quote a value that contains ': ', and start each key on its own line)"},
		{"could not find expected ':'", "a key is missing its ':'"},
		{"did not find expected ',' or ']'", "a [list] is not closed with ]"},
		{"did not find expected ',' or '}'", "a {block} is not closed with }"},
		{"found unexpected end of stream", "a quoted value is not closed"},
		{"did not find expected node content", "a value is missing here (an unclosed [ or {?)"},
		{"block sequence entries are not allowed in this context", "a '- ' list item where a value was expected (put the list on the lines below its key, indented)"},
		{"found character that cannot start any token", "a value cannot start with this character (quote it)"},
	}
)

// syntaxError reports a YAML syntax error at the line that caused it. The parser
// often names the line where the enclosing block starts instead, so the line is
// found again: it is the one after the longest prefix of the expanded text that
// parses. The line is shown as written in raw, before ${VAR} expansion, with
// secret-looking values hidden.
func syntaxError(raw, text string, err error) *Error {
	msg := yamlPrefix.ReplaceAllString(err.Error(), "")
	line := 0
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
	}
	lines := strings.SplitAfter(text, "\n")
	if len(lines) <= 5000 {
		for k := len(lines) - 1; k >= 0; k-- {
			var probe yaml.Node
			if yaml.Unmarshal([]byte(strings.Join(lines[:k], "")), &probe) == nil {
				line = k + 1
				break
			}
		}
	}
	src := ""
	if rawLines := strings.SplitAfter(raw, "\n"); len(rawLines) == len(lines) && line > 0 && line <= len(lines) {
		src = redactLine(strings.TrimRight(rawLines[line-1], "\r\n"))
	}
	for _, h := range syntaxHelp {
		if strings.HasPrefix(msg, h.yaml) {
			msg = h.plain
			if h.yaml == "found character that cannot start any token" && strings.Contains(src, "\t") {
				msg = "tabs cannot indent YAML: use spaces"
			}
			break
		}
	}
	if strings.TrimSpace(src) != "" {
		msg += ": " + strconv.Quote(src)
	}
	return &Error{Line: line, Msg: msg}
}

var secretKey = regexp.MustCompile(`(?i)^(\s*-?\s*[^:#]*(key|secret|token|password|authorization)[^:#]*:\s*)\S.*$`)

// redactLine hides the value of a line whose key looks like a secret.
func redactLine(src string) string {
	return secretKey.ReplaceAllString(src, "${1}[redacted]")
}

var (
	unmarshalMsg = regexp.MustCompile("^cannot unmarshal (?:!!\\w+ )?`?([^`]*?)`? into .*$")
	unknownMsg   = regexp.MustCompile(`^field (\S+) not found in type \S+$`)
)

// fallback words a decoding error the checker did not foresee, without Go type
// names.
func fallback(err error, root *yaml.Node) error {
	var errs []*Error
	for _, line := range strings.Split(err.Error(), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line == "yaml: unmarshal errors:" {
			continue
		}
		e := &Error{Msg: yamlPrefix.ReplaceAllString(line, "")}
		if m := yamlLine.FindStringSubmatch(line); m != nil {
			e.Line, _ = strconv.Atoi(m[1])
			e.Msg = m[2]
			e.Path = keyAtLine(root, e.Line, "")
		}
		if m := unknownMsg.FindStringSubmatch(e.Msg); m != nil {
			e.Msg = fmt.Sprintf("unknown key %q", m[1])
		} else if m := unmarshalMsg.FindStringSubmatch(e.Msg); m != nil {
			e.Msg = fmt.Sprintf("%q is not a valid value here", m[1])
		}
		errs = append(errs, e)
	}
	return join(errs)
}

// keyAtLine finds the key path of the last key written on line.
func keyAtLine(n *yaml.Node, line int, prefix string) string {
	found := ""
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if p := keyAtLine(c, line, prefix); p != "" {
				found = p
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if prefix != "" {
				p = prefix + "." + k.Value
			}
			if k.Line == line {
				found = p
			}
			if q := keyAtLine(v, line, p); q != "" {
				found = q
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if q := keyAtLine(c, line, fmt.Sprintf("%s[%d]", prefix, i)); q != "" {
				found = q
			}
		}
	}
	return found
}
