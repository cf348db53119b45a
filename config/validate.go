package config

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard/switchyard/resilience"
)

// Validate reports every problem in cfg at once, each an *Error with its key path.
func (c *Config) Validate() error { return join(c.problems()) }

type addFunc func(path, format string, args ...any)

func (c *Config) problems() []*Error {
	var errs []*Error
	add := func(path, format string, args ...any) {
		errs = append(errs, &Error{Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	validateServer(c.Server, add)
	validateResilience("resilience", c.Resilience, add)
	validateBackoff("resilience", Resilience{}, c.Resilience, add)
	for _, name := range c.providerNames() {
		p := c.Providers[name]
		path := "providers." + name
		if p == nil {
			add(path, "empty provider block")
			continue
		}
		if name == "" || strings.ContainsAny(name, "/ ") {
			add(path, "provider names must be non-empty and contain no '/' or spaces")
		}
		validateLimits(path+".limits", p.Limits, add)
		if _, ok := ProviderTypes[p.Type]; !ok {
			add(path+".type", "unknown type %q (want one of %s)", p.Type, typeList())
		}
		if p.BaseURL != "" {
			if u, err := url.Parse(p.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				add(path+".base_url", "%q is not an http(s) URL", withoutUserinfo(p.BaseURL))
			}
		}
		for i, m := range p.Models {
			if strings.TrimSpace(m) == "" {
				add(fmt.Sprintf("%s.models[%d]", path, i), "must not be empty")
			}
		}
		validateTypeSettings(path, p, add)
		nonNegativeDurations(path, *p, add)
		nonNegativeDurations(path+".simulator", p.Simulator, add)
		if p.Simulator.Dimensions < 0 {
			add(path+".simulator.dimensions", "must not be negative; got %d", p.Simulator.Dimensions)
		}
		if p.Simulator.Tokens < 0 {
			add(path+".simulator.tokens", "must not be negative; got %d", p.Simulator.Tokens)
		}
		validateResilience(path+".resilience", p.Resilience, add)
		validateBackoff(path+".resilience", c.Resilience, p.Resilience, add)
	}
	validateFailover("failover", &c.Failover, add)
	validateVirtualModels(c, add)
	validateUsage(c, add)
	validateState(c.State, add)
	slices.SortStableFunc(errs, func(a, b *Error) int { return strings.Compare(a.Path, b.Path) })
	return errs
}

func (c *Config) providerNames() []string {
	names := make([]string, 0, len(c.Providers))
	for name := range c.Providers {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func validateServer(s Server, add addFunc) {
	for _, e := range s.addrProblems() {
		add(e.Path, "%s", e.Msg)
	}
	if s.MaxBodyBytes < 0 {
		add("server.max_body_bytes", "must not be negative; got %d", s.MaxBodyBytes)
	}
	if f := s.HeapFloor(); f < 0 || f > 1<<40 {
		add("server.heap_floor_bytes", "must be from 0 (off) to 1 TiB (1099511627776); got %d", f)
	}
	nonNegativeDurations("server", s, add)
}

// nonNegativeDurations rejects a negative value in any duration field of the
// struct block (a negative timeout or interval would silently mean none).
func nonNegativeDurations(path string, block any, add addFunc) {
	v := reflect.ValueOf(block)
	for i := range v.NumField() {
		if name := yamlName(v.Type().Field(i)); name != "" && v.Field(i).Type() == durationType {
			nonNegative(path+"."+name, time.Duration(v.Field(i).Int()), add)
		}
	}
}

// CheckAddrs reports listen addresses that are not host:port, each with its key
// path. Validate includes it; callers that change an address after loading (a
// command-line flag) call it before anything else looks at the address.
func (s Server) CheckAddrs() error { return join(s.addrProblems()) }

func (s Server) addrProblems() []*Error {
	var errs []*Error
	for _, a := range []struct{ key, addr string }{{"server.http_addr", s.HTTPAddr}, {"server.grpc_addr", s.GRPCAddr}} {
		if msg := checkListenAddr(a.addr); msg != "" {
			errs = append(errs, &Error{Path: a.key, Msg: msg})
		}
	}
	return errs
}

func checkListenAddr(addr string) string {
	if addr == "" {
		return "" // the default
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return fmt.Sprintf("%q is not a listen address: write host:port, such as 127.0.0.1:8080 or :8080", addr)
	}
	if n, err := strconv.Atoi(port); err == nil {
		if n < 0 || n > 65535 {
			return fmt.Sprintf("%q: port %d is out of range (0 to 65535)", addr, n)
		}
		return ""
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Sprintf("%q: port %q is not a number from 0 to 65535", addr, port)
	}
	return ""
}

func nonNegative(path string, d time.Duration, add addFunc) {
	if d < 0 {
		add(path, "must not be negative; got %s", d)
	}
}

func typeList() string {
	t := make([]string, 0, len(ProviderTypes))
	for k := range ProviderTypes {
		t = append(t, k)
	}
	slices.Sort(t)
	return strings.Join(t, ", ")
}

func num(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func validateResilience(path string, r Resilience, add addFunc) {
	rt, cb := r.Retry, r.CircuitBreaker
	nonNeg := func(key string, v *int) {
		if v != nil && *v < 0 {
			add(path+"."+key, "must not be negative; got %d", *v)
		}
	}
	nonNeg("retry.max_retries", rt.MaxRetries)
	nonNeg("retry.budget_min_concurrency", rt.BudgetMinConcurrency)
	nonNeg("circuit_breaker.failure_threshold", cb.FailureThreshold)
	if cb.SuccessThreshold != nil && *cb.SuccessThreshold < 1 {
		add(path+".circuit_breaker.success_threshold", "must be at least 1; got %d", *cb.SuccessThreshold)
	}
	for _, f := range []struct {
		key      string
		v        *float64
		min, max float64
		want     string
	}{
		{"retry.backoff_factor", rt.BackoffFactor, 1, math.MaxFloat64, "must be at least 1"},
		{"retry.jitter_factor", rt.JitterFactor, 0, 1, "must be between 0 and 1"},
		{"retry.budget_percent", rt.BudgetPercent, 0, 100, "must be between 0 and 100"},
	} {
		if f.v != nil && (math.IsNaN(*f.v) || *f.v < f.min || *f.v > f.max) {
			add(path+"."+f.key, "%s; got %s", f.want, num(*f.v))
		}
	}
	for key, d := range map[string]*time.Duration{
		"retry.initial_backoff": rt.InitialBackoff, "circuit_breaker.slow_call_threshold": cb.SlowCallThreshold,
		"first_token_timeout": r.FirstTokenTimeout,
	} {
		if d != nil {
			nonNegative(path+"."+key, *d, add)
		}
	}
	if rt.MaxBackoff != nil && *rt.MaxBackoff <= 0 {
		add(path+".retry.max_backoff", "must be more than 0; got %s", *rt.MaxBackoff)
	}
	if cb.Timeout != nil && *cb.Timeout <= 0 {
		add(path+".circuit_breaker.timeout", "must be more than 0 (to turn the breaker off, set enabled: false); got %s", *cb.Timeout)
	}
	if rt.RetryOnStatuses != nil {
		if _, err := resilience.ParseStatusSet(*rt.RetryOnStatuses); err != nil {
			add(path+".retry.retry_on_statuses", "%v", err)
		}
	}
	if cb.FailureOnStatuses != nil {
		if _, err := resilience.ParseStatusSet(*cb.FailureOnStatuses); err != nil {
			add(path+".circuit_breaker.failure_on_statuses", "%v", err)
		}
	}
	if cb.Scope != nil && *cb.Scope != string(resilience.ScopeProvider) && *cb.Scope != string(resilience.ScopeModel) {
		add(path+".circuit_breaker.scope", "unknown scope %q (want provider or model)", *cb.Scope)
	}
}

// validateBackoff checks that the effective max_backoff is at least the effective
// initial_backoff, once per block that sets either of them. own is the block at
// path; parent is what it inherits from (empty for the global block).
func validateBackoff(path string, parent, own Resilience, add addFunc) {
	ri, rm := own.Retry.InitialBackoff, own.Retry.MaxBackoff
	if ri == nil && rm == nil {
		return
	}
	eff, _ := ResolveResilience(parent, own)
	if eff.MaxBackoff <= 0 || eff.InitialBackoff < 0 || eff.MaxBackoff >= eff.InitialBackoff {
		return
	}
	from := func(key string, mine, inherited *time.Duration) string {
		switch {
		case mine != nil:
			return key
		case inherited != nil:
			return "resilience.retry." + key
		}
		return "the default " + key
	}
	if rm != nil {
		add(path+".retry.max_backoff", "must be at least %s (%s); got %s",
			from("initial_backoff", ri, parent.Retry.InitialBackoff), eff.InitialBackoff, eff.MaxBackoff)
		return
	}
	add(path+".retry.initial_backoff", "must be at most %s (%s); got %s",
		from("max_backoff", rm, parent.Retry.MaxBackoff), eff.MaxBackoff, eff.InitialBackoff)
}

func validateFailover(path string, f *Failover, add addFunc) {
	if f == nil {
		return
	}
	if f.RetryOnStatuses != nil {
		if _, err := resilience.ParseStatusSet(*f.RetryOnStatuses); err != nil {
			add(path+".retry_on_statuses", "%v", err)
		}
	}
	for i, phrase := range f.RetryOnErrors {
		if strings.TrimSpace(phrase) == "" {
			add(fmt.Sprintf("%s.retry_on_errors[%d]", path, i), "must not be empty (an empty phrase would match every error)")
		}
	}
	if f.MaxAttempts != nil && *f.MaxAttempts < 0 {
		add(path+".max_attempts", "must not be negative; got %d", *f.MaxAttempts)
	}
}

func validateVirtualModels(c *Config, add addFunc) {
	sources := map[string]bool{}
	for i, vm := range c.VirtualModels {
		path := fmt.Sprintf("virtual_models[%d]", i)
		if vm.Source == "" {
			add(path+".source", "is required")
		} else if sources[vm.Source] {
			add(path+".source", "duplicate virtual model %q", vm.Source)
		}
		sources[vm.Source] = true
		switch vm.Strategy {
		case "", "failover", "round_robin", "weighted":
		default:
			add(path+".strategy", "unknown strategy %q (want failover, round_robin or weighted)", vm.Strategy)
		}
		if len(vm.Targets) == 0 {
			add(path+".targets", "needs at least one target")
		}
		total := 0
		for j, t := range vm.Targets {
			tp := fmt.Sprintf("%s.targets[%d]", path, j)
			prov, model, ok := strings.Cut(t.Model, "/")
			if !ok || model == "" {
				add(tp+".model", "%q must be provider/model", t.Model)
			} else if _, known := c.Providers[prov]; !known {
				add(tp+".model", "unknown provider %q", prov)
			}
			w := 1
			if t.Weight != nil {
				w = *t.Weight
			}
			if w < 0 {
				add(tp+".weight", "must not be negative; got %d", w)
			} else {
				total += w
			}
		}
		if vm.Strategy == "weighted" && len(vm.Targets) > 0 && total == 0 {
			add(path+".targets", "the weighted strategy needs a target with a weight above 0")
		}
		validateFailover(path+".failover", vm.Failover, add)
		if vm.HedgeAfter != nil {
			nonNegative(path+".hedge_after", *vm.HedgeAfter, add)
		}
		if r := vm.StreamResume; r != nil && r.MaxResumes != nil && *r.MaxResumes < 1 {
			add(path+".stream_resume.max_resumes", "must be at least 1 (turn recovery off with stream_resume: false); got %d", *r.MaxResumes)
		}
	}
}

// userinfo is a URL's "user:password@" part, found without parsing the URL (one
// that does not parse is exactly the one being reported).
var userinfo = regexp.MustCompile(`//[^/@]*@`)

// withoutUserinfo is rawURL with any userinfo removed, for messages and logs.
func withoutUserinfo(rawURL string) string { return userinfo.ReplaceAllString(rawURL, "//") }
