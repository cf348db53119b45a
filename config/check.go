package config

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// checker walks the YAML tree against the config types before decoding, so that
// unknown keys and values of the wrong kind are reported in the file's own words
// (never a Go type name), each with its key path and line, all at once.
type checker struct {
	errs []*Error
	// lines maps every key path seen to its line, for later validation messages.
	lines map[string]int
}

var (
	durationType   = reflect.TypeFor[time.Duration]()
	statusListType = reflect.TypeFor[StatusList]()
	failoverType   = reflect.TypeFor[Failover]()
	resumeType     = reflect.TypeFor[StreamResume]()
)

func (c *checker) add(path string, line int, format string, args ...any) {
	c.errs = append(c.errs, &Error{Path: path, Line: line, Msg: fmt.Sprintf(format, args...)})
}

// document checks the whole file.
func (c *checker) document(root *yaml.Node) {
	if root.Kind != yaml.DocumentNode || len(root.Content) == 0 {
		return
	}
	n := deref(root.Content[0])
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		c.add("", n.Line, "the file must be a block of settings such as server: and providers:; got %s", describe(n))
		return
	}
	c.value(n, reflect.TypeFor[Config](), "")
}

func (c *checker) value(n *yaml.Node, t reflect.Type, path string) {
	n = deref(n)
	if isNull(n) {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case durationType:
		c.duration(n, path)
		return
	case statusListType:
		c.statusList(n, path)
		return
	case failoverType, resumeType:
		if n.Kind == yaml.ScalarNode {
			var b bool
			if n.Decode(&b) != nil {
				c.add(path, n.Line, "expected true, false or a block (%s); got %s", strings.Join(keysOf(t), ", "), describe(n))
			}
			return
		}
	}
	switch t.Kind() {
	case reflect.Struct:
		c.structure(n, t, path)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			c.add(path, n.Line, "expected a block of name: value pairs; got %s", describe(n))
			return
		}
		c.pairs(n, path, func(k, v *yaml.Node, p string) { c.value(v, t.Elem(), p) })
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			c.add(path, n.Line, "expected a list, such as [%s]; got %s", example(n, "a, b"), describe(n))
			return
		}
		for i, item := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			c.lines[p] = item.Line
			c.value(item, t.Elem(), p)
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			c.add(path, n.Line, "expected a single value (text); got %s", describe(n))
		}
	case reflect.Bool:
		var b bool
		if n.Kind != yaml.ScalarNode || n.Decode(&b) != nil {
			c.add(path, n.Line, "expected true or false; got %s", describe(n))
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		c.integer(n, t, path)
	case reflect.Float32, reflect.Float64:
		var f float64
		if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") || n.Decode(&f) != nil {
			c.add(path, n.Line, "expected a number, such as 0.5; got %s", describe(n))
		}
	}
}

func (c *checker) integer(n *yaml.Node, t reflect.Type, path string) {
	v := reflect.New(t)
	ok := n.Kind == yaml.ScalarNode && n.Decode(v.Interface()) == nil
	if ok && n.Tag == "!!float" {
		f, err := strconv.ParseFloat(n.Value, 64)
		ok = err == nil && f == math.Trunc(f)
	}
	if !ok {
		c.add(path, n.Line, "expected a whole number, such as 3; got %s", describe(n))
	}
}

func (c *checker) duration(n *yaml.Node, path string) {
	if n.Kind != yaml.ScalarNode {
		c.add(path, n.Line, "expected a duration such as 30s, 500ms or 2m; got %s", describe(n))
		return
	}
	if _, err := time.ParseDuration(n.Value); err == nil && n.Tag == "!!str" {
		return
	}
	if _, err := strconv.ParseFloat(n.Value, 64); err == nil {
		c.add(path, n.Line, "expected a duration with a unit: write %ss for %s seconds (units: ms, s, m, h)", n.Value, n.Value)
		return
	}
	c.add(path, n.Line, "expected a duration such as 30s, 500ms or 2m; got %s", describe(n))
}

func (c *checker) statusList(n *yaml.Node, path string) {
	if n.Kind != yaml.SequenceNode {
		c.add(path, n.Line, "expected a list of statuses, such as [%s]; got %s", example(n, "429, 5xx"), describe(n))
		return
	}
	for i, item := range n.Content {
		if item = deref(item); item.Kind != yaml.ScalarNode {
			c.add(fmt.Sprintf("%s[%d]", path, i), item.Line, "expected a status such as 429 or 5xx; got %s", describe(item))
		}
	}
}

func (c *checker) structure(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.MappingNode {
		c.add(path, n.Line, "expected a block of settings (%s); got %s", strings.Join(keysOf(t), ", "), describe(n))
		return
	}
	c.pairs(n, path, func(k, v *yaml.Node, p string) {
		f, ok := fieldOf(t, k.Value)
		if !ok {
			c.add(p, k.Line, "unknown key %q%s", k.Value, suggest(t, k.Value, path))
			return
		}
		c.value(v, f.Type, p)
	})
}

// pairs checks a mapping's keys (scalars, each once, "<<" merges followed) and
// hands each value on with its path.
func (c *checker) pairs(n *yaml.Node, path string, each func(k, v *yaml.Node, p string)) {
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			c.add(path, k.Line, "a key must be a plain name; got %s", describe(k))
			continue
		}
		if k.Tag == "!!merge" {
			for _, m := range mergeSources(deref(v)) {
				c.pairs(m, path, each)
			}
			continue
		}
		p := k.Value
		if path != "" {
			p = path + "." + k.Value
		}
		if first, dup := seen[k.Value]; dup {
			c.add(p, k.Line, "%q is set twice (first on line %d)", k.Value, first)
			continue
		}
		seen[k.Value] = k.Line
		c.lines[p] = k.Line
		each(k, v, p)
	}
}

func mergeSources(v *yaml.Node) []*yaml.Node {
	switch v.Kind {
	case yaml.MappingNode:
		return []*yaml.Node{v}
	case yaml.SequenceNode:
		var out []*yaml.Node
		for _, m := range v.Content {
			if m = deref(m); m.Kind == yaml.MappingNode {
				out = append(out, m)
			}
		}
		return out
	}
	return nil
}

func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// describe names what the file holds, for "got ..." in messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a block of keys"
	case yaml.ScalarNode:
		if n.Tag == "!!str" {
			return strconv.Quote(n.Value)
		}
		return n.Value
	}
	return "something else"
}

// example turns a scalar into a list example ([x] for x), else uses def.
func example(n *yaml.Node, def string) string {
	if n.Kind == yaml.ScalarNode && n.Value != "" {
		return n.Value
	}
	return def
}

// yamlName is the key a struct field is written as ("" for none).
func yamlName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	switch name {
	case "-":
		return ""
	case "":
		return strings.ToLower(f.Name)
	}
	return name
}

func keysOf(t reflect.Type) []string {
	var keys []string
	for i := range t.NumField() {
		if name := yamlName(t.Field(i)); name != "" {
			keys = append(keys, name)
		}
	}
	return keys
}

func fieldOf(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if f := t.Field(i); yamlName(f) == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// suggest names the nearest known key of t, or a nested block that has key, or
// lists the known keys.
func suggest(t reflect.Type, key, path string) string {
	keys := keysOf(t)
	best, bestD := "", math.MaxInt
	for _, k := range keys {
		if d := distance(strings.ToLower(key), k); d < bestD {
			best, bestD = k, d
		}
	}
	if bestD <= 2 && bestD*2 <= len(key) {
		return fmt.Sprintf("; did you mean %q?", best)
	}
	for i := range t.NumField() {
		f := t.Field(i)
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if name := yamlName(f); name != "" && ft.Kind() == reflect.Struct && ft != durationType {
			if _, ok := fieldOf(ft, key); ok {
				p := name + "." + key
				if path != "" {
					p = path + "." + p
				}
				return fmt.Sprintf("; did you mean %s?", p)
			}
		}
	}
	slices.Sort(keys)
	return "; known keys: " + strings.Join(keys, ", ")
}

// distance is the optimal-string-alignment edit distance (a swap of two
// neighbouring letters counts once).
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
