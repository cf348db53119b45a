package usage

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Price is one model's price in USD per million tokens.
type Price struct {
	// Input prices prompt tokens not read from (or written to) the cache.
	Input float64 `yaml:"input" json:"input"`
	// Output prices completion tokens, reasoning included.
	Output float64 `yaml:"output" json:"output"`
	// CachedInput prices prompt tokens read from the cache; unset: Input.
	CachedInput *float64 `yaml:"cached_input" json:"cached_input"`
	// CacheWriteInput prices prompt tokens written to the cache (Anthropic); unset: Input.
	CacheWriteInput *float64 `yaml:"cache_write_input" json:"cache_write_input"`
}

// Prices maps "provider/model" or a bare model name to its price.
type Prices map[string]Price

// Lookup finds the price of model on provider: "provider/model" first, then the
// bare model name. ok is false when neither is priced.
func (p Prices) Lookup(provider, model string) (Price, bool) {
	if pr, ok := p[provider+"/"+model]; ok {
		return pr, true
	}
	pr, ok := p[model]
	return pr, ok
}

// priceIndex is Prices for the request path: "provider/model" found without
// building the string.
type priceIndex struct {
	full map[[2]string]Price // every split of a name at a '/': the same as Lookup's concatenation
	bare Prices
}

func indexPrices(p Prices) priceIndex {
	ix := priceIndex{full: map[[2]string]Price{}, bare: p}
	for name, pr := range p {
		for i := 0; i < len(name); i++ {
			if name[i] == '/' {
				ix.full[[2]string{name[:i], name[i+1:]}] = pr
			}
		}
	}
	return ix
}

// cost is Prices.Cost without allocating the lookup key.
func (ix priceIndex) cost(provider, model string, t Tokens) *float64 {
	pr, ok := ix.full[[2]string{provider, model}]
	if !ok {
		if pr, ok = ix.bare[model]; !ok {
			return nil
		}
	}
	c := pr.Cost(t)
	return &c
}

// Cost prices t: nil when the model has no price (never a made-up number).
func (p Prices) Cost(provider, model string, t Tokens) *float64 {
	pr, ok := p.Lookup(provider, model)
	if !ok {
		return nil
	}
	c := pr.Cost(t)
	return &c
}

// Cost is what t costs at this price, in USD.
func (pr Price) Cost(t Tokens) float64 {
	cached, write := pr.Input, pr.Input
	if pr.CachedInput != nil {
		cached = *pr.CachedInput
	}
	if pr.CacheWriteInput != nil {
		write = *pr.CacheWriteInput
	}
	plain := max(t.Prompt-t.Cached-t.CacheWrite, 0)
	micro := float64(plain)*pr.Input + float64(t.Cached)*cached + float64(t.CacheWrite)*write + float64(t.Completion)*pr.Output
	return micro / 1e6
}

// Check reports every invalid price at once (negative or not a number).
func (p Prices) Check() []string {
	var problems []string
	for name, pr := range p {
		if strings.TrimSpace(name) == "" {
			problems = append(problems, "a price needs a model name")
		}
		for field, v := range map[string]*float64{"input": &pr.Input, "output": &pr.Output,
			"cached_input": pr.CachedInput, "cache_write_input": pr.CacheWriteInput} {
			if v != nil && (*v < 0 || math.IsNaN(*v) || math.IsInf(*v, 0)) {
				problems = append(problems, fmt.Sprintf("%s.%s: must be a non-negative number of USD per million tokens; got %v", name, field, *v))
			}
		}
	}
	return problems
}

// LoadPrices reads a pricing file: YAML or JSON, the shape of the config's
// pricing: block (a mapping of model to price), optionally under a "pricing" key.
func LoadPrices(path string) (Prices, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("pricing_file: %w", err)
	}
	var doc struct {
		Pricing Prices `yaml:"pricing"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err == nil && doc.Pricing != nil {
		return doc.Pricing, checked(path, doc.Pricing)
	}
	var flat Prices
	dec = yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&flat); err != nil {
		return nil, fmt.Errorf("pricing_file %s: %w", path, err)
	}
	return flat, checked(path, flat)
}

func checked(path string, p Prices) error {
	if problems := p.Check(); len(problems) > 0 {
		return fmt.Errorf("pricing_file %s: %w", path, errors.New(strings.Join(problems, "; ")))
	}
	return nil
}

// Merge is base with over's entries added on top (over wins).
func Merge(base, over Prices) Prices {
	out := make(Prices, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}
