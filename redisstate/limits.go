package redisstate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard/switchyard/limits"
)

// LeaseTTL is how long a concurrency slot is held in Redis without its release:
// the longest a replica that died mid-call keeps a slot of max_concurrency. Live
// replicas release their slots when calls end, whatever the TTL.
const LeaseTTL = 15 * time.Minute

// admitScript checks and charges rpm, tpm and max_concurrency of one subject
// atomically, in one round trip. Instants are microseconds since the epoch (Lua
// numbers are doubles: nanoseconds would lose precision), from Redis's own clock
// so that every replica shares one. A unit's interval is a fraction of a
// microsecond above 60M a minute (a tpm of 150M: 0.4 µs), so theoretical
// arrival times keep their fractions (stored as %.17g, the double exactly, to a
// quarter microsecond at today's epoch): rounded to whole microseconds, every
// limit above 60M was 60M. The limits' state expires once it is full again (a
// state with nothing charged is not kept at all), and concurrency leases after
// LeaseTTL.
//
// KEYS[1] hash {r = rpm TAT, t = tpm TAT}; KEYS[2] sorted set lease -> expiry.
// ARGV rpm, tpm, max_concurrency, tokens, now (empty: Redis's clock), lease, lease ttl (µs).
// Returns {allowed, limit, retry µs, now, rpm remaining, rpm reset µs, tpm remaining, tpm reset µs}.
var admitScript = redis.NewScript(`
local rpm, tpm, conc, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local now = tonumber(ARGV[5])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local period = 60000000
local st = redis.call('HMGET', KEYS[1], 'r', 't')
local tats = {tonumber(st[1]) or 0, tonumber(st[2]) or 0}
local limits = {rpm, tpm}
local costs = {1, cost}
local names = {'requests', 'tokens'}
local nexts = {tats[1], tats[2]}
local allowed, limit, retry = 1, '', 0
for i = 1, 2 do
  local n = limits[i]
  if n > 0 then
    local iv = period / n
    local c = math.min(costs[i], n)
    local base = math.max(tats[i], now)
    local nxt = base + c * iv
    if nxt - now > period then
      allowed = 0
      local wait = nxt - now - period
      if limit == '' or wait > retry then limit, retry = names[i], wait end
    else
      nexts[i] = nxt
    end
  end
end
if allowed == 1 and conc > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', string.format('%.0f', now))
  if redis.call('ZCARD', KEYS[2]) >= conc then
    allowed, limit, retry = 0, 'concurrency', 0
  end
end
if allowed == 1 then
  local keep = math.max(nexts[1], nexts[2]) - now
  if keep > 0 then
    redis.call('HSET', KEYS[1], 'r', string.format('%.17g', nexts[1]), 't', string.format('%.17g', nexts[2]))
    redis.call('PEXPIRE', KEYS[1], math.ceil(keep / 1000) + 1000)
  else
    redis.call('DEL', KEYS[1]) -- nothing charged beyond now: the same as no state
  end
  if conc > 0 then
    local ttl = tonumber(ARGV[7])
    redis.call('ZADD', KEYS[2], string.format('%.0f', now + ttl), ARGV[6])
    redis.call('PEXPIRE', KEYS[2], math.ceil(ttl / 1000))
  end
else
  nexts = tats
end
local out = {allowed, limit, math.ceil(retry), now}
for i = 1, 2 do
  local n = limits[i]
  if n > 0 then
    local iv = period / n
    local used = math.max(nexts[i] - now, 0)
    out[#out + 1] = math.floor((period - math.min(used, period)) / iv)
    out[#out + 1] = math.ceil(used)
  else
    out[#out + 1] = 0
    out[#out + 1] = 0
  end
end
return out
`)

// releaseScript frees a lease and corrects the charges. Sent again (retry 1),
// it does nothing once the lease is gone: the first try was taken, its answer
// lost.
// ARGV rpm, tpm, token delta, undo (1/0), now (empty: Redis's clock), lease, retry (1/0).
var releaseScript = redis.NewScript(`
local rpm, tpm, delta, undo = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4] == '1'
local now = tonumber(ARGV[5])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
if ARGV[6] ~= '' and redis.call('ZREM', KEYS[2], ARGV[6]) == 0 and ARGV[7] == '1' then return 0 end
local period = 60000000
local function adjust(field, n, d)
  local iv = period / n
  local tat = tonumber(redis.call('HGET', KEYS[1], field)) or 0
  if d > 0 then tat = math.max(tat, now) + d * iv else tat = tat + d * iv end
  redis.call('HSET', KEYS[1], field, string.format('%.17g', tat))
  return tat
end
local r = tonumber(redis.call('HGET', KEYS[1], 'r')) or 0
local t = tonumber(redis.call('HGET', KEYS[1], 't')) or 0
if tpm > 0 and delta ~= 0 then t = adjust('t', tpm, delta) end
if rpm > 0 and undo then r = adjust('r', rpm, -1) end
local keep = math.max(r, t) - now
if keep > 0 then
  redis.call('PEXPIRE', KEYS[1], math.ceil(keep / 1000) + 1000)
elseif redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('DEL', KEYS[1])
end
return 1
`)

// Limits is limits.Backend on Redis: one limit holds across every replica. While
// Redis cannot answer, Admit follows the client's policy: Allow decides with a
// local in-memory backend (this replica counting alone), Deny refuses.
type Limits struct {
	c       *Client
	local   *limits.Memory
	pending atomic.Int32 // background release retries running
	// callerClock uses the limiter's clock instead of Redis's (tests).
	callerClock bool
}

// localLease marks a lease the local backend granted during an outage.
const localLease = "local:"

// NewLimits returns the Redis backend.
func NewLimits(c *Client) *Limits { return &Limits{c: c, local: limits.NewMemory()} }

// WithCallerClock makes the scripts use the limiter's clock (Request.Now) instead
// of Redis's TIME: for tests with a fake clock. Production keeps Redis's clock,
// one clock for all replicas.
func (l *Limits) WithCallerClock() *Limits { l.callerClock = true; return l }

var _ limits.Backend = (*Limits)(nil)

func (l *Limits) keys(subject string) []string {
	// The hash tag keeps a subject's two keys in one slot (Redis Cluster).
	base := l.c.key("lim", "{"+subject+"}")
	return []string{base, base + ":c"}
}

func (l *Limits) now(t time.Time) string {
	if !l.callerClock {
		return ""
	}
	return strconv.FormatInt(t.UnixMicro(), 10)
}

// Admit implements limits.Backend.
func (l *Limits) Admit(ctx context.Context, r limits.Request) (limits.Decision, error) {
	if l.c.health.skip() {
		return l.outage(ctx, r)
	}
	lease := newLease()
	var res []any
	err := l.c.call(ctx, "admit", func(ctx context.Context) error {
		var err error
		res, err = admitScript.Run(ctx, l.c.rdb, l.keys(r.Subject), r.Limits.RPM, r.Limits.TPM, r.Limits.MaxConcurrency,
			r.Tokens, l.now(r.Now), lease, LeaseTTL.Microseconds()).Slice()
		return err
	})
	if err != nil {
		l.abandon(ctx, r, lease, err)
		if ctx.Err() != nil {
			return limits.Decision{}, ctx.Err() // the caller left: not an outage
		}
		return l.outage(ctx, r)
	}
	d, err := decision(res, r.Limits)
	if err != nil {
		return limits.Decision{}, err
	}
	if d.Allowed && r.Limits.MaxConcurrency > 0 {
		d.Lease = lease
	}
	return d, nil
}

// abandon takes back what an admit whose answer never came (err) may have taken
// all the same: Redis runs a call its client gave up on once it gets to it (a
// stall, a slow command before it), and the lease it adds would hold a
// concurrency slot for LeaseTTL. Once Redis answers again, a release gives back
// the lease, its request and its tokens; it finds the lease only if the admit
// ran, and otherwise gives back nothing. An admit without a concurrency limit
// holds no lease to tell by: its charge, if it ran, ends with its minute.
func (l *Limits) abandon(ctx context.Context, r limits.Request, lease string, err error) {
	if r.Limits.MaxConcurrency <= 0 || unsent(err) {
		return
	}
	l.retryLater(ctx, limits.Release{Subject: r.Subject, Limits: r.Limits, Lease: lease, TokenDelta: -r.Tokens, Undo: true, Now: r.Now})
}

// outage decides without Redis, by the policy.
func (l *Limits) outage(ctx context.Context, r limits.Request) (limits.Decision, error) {
	l.c.health.decidedWithout(l.c.cfg.OnError)
	if l.c.cfg.OnError == Deny {
		return limits.Decision{Limit: limits.Requests, RetryAfter: time.Second}, nil
	}
	d, err := l.local.Admit(ctx, r)
	if d.Allowed {
		d.Lease = localLease
	}
	return d, err
}

// Release implements limits.Backend: one round trip when there is something to
// give back (a concurrency slot, a token correction, an undone request), none
// otherwise. A release Redis cannot take now is retried in the background once a
// second for releaseRetryFor (at most maxPendingReleases at once), so that a short
// outage does not hold a key's concurrency slots until LeaseTTL; past that the
// slot frees itself at LeaseTTL and the token correction is dropped.
//
// A release is retried only when a retry cannot count it twice: it holds a
// lease (the retry finds the lease gone if the first try was taken and its
// answer lost), or the first try never reached Redis. A correction without a
// lease whose try may have been taken is dropped instead: the charge it
// corrected ends with its minute.
func (l *Limits) Release(ctx context.Context, r limits.Release) error {
	if r.Lease == localLease {
		return l.local.Release(ctx, r)
	}
	if r.Lease == "" && r.TokenDelta == 0 && !r.Undo {
		return nil // nothing to give back (no slot, no correction): no round trip
	}
	err := errUnsent
	if !l.c.health.skip() {
		err = l.release(ctx, r, false)
	}
	if err == nil || (r.Lease == "" && !unsent(err)) {
		return err
	}
	l.retryLater(ctx, r)
	return err
}

// retryLater retries r in the background (retryRelease), at most
// maxPendingReleases at once.
func (l *Limits) retryLater(ctx context.Context, r limits.Release) {
	if l.pending.Add(1) <= maxPendingReleases {
		go l.retryRelease(context.WithoutCancel(ctx), r)
	} else {
		l.pending.Add(-1)
	}
}

// errUnsent is a call not made: Redis is down and not due a probe.
var errUnsent = errors.New("redis unreachable")

// unsent reports whether a call that failed with err surely never reached
// Redis: not made, or no connection to send it on.
func unsent(err error) bool {
	var op *net.OpError
	return errors.Is(err, errUnsent) || errors.Is(err, redis.ErrPoolTimeout) || (errors.As(err, &op) && op.Op == "dial")
}

// Bounds of the background retries of failed releases.
const (
	releaseRetryFor    = 30 * time.Second
	maxPendingReleases = 1024
)

func (l *Limits) retryRelease(ctx context.Context, r limits.Release) {
	defer l.pending.Add(-1)
	for deadline := time.Now().Add(releaseRetryFor); time.Now().Before(deadline); {
		time.Sleep(probeInterval)
		err := l.release(ctx, r, true)
		if err == nil || errors.Is(err, redis.ErrClosed) || (r.Lease == "" && !unsent(err)) {
			return
		}
	}
}

func (l *Limits) release(ctx context.Context, r limits.Release, retry bool) error {
	undo, again := "0", "0"
	if r.Undo {
		undo = "1"
	}
	if retry {
		again = "1"
	}
	return l.c.call(ctx, "release", func(ctx context.Context) error {
		return releaseScript.Run(ctx, l.c.rdb, l.keys(r.Subject), r.Limits.RPM, r.Limits.TPM, r.TokenDelta, undo,
			l.now(r.Now), r.Lease, again).Err()
	})
}

func decision(res []any, lim limits.Limits) (limits.Decision, error) {
	if len(res) != 8 {
		return limits.Decision{}, fmt.Errorf("admit script: %d results, want 8", len(res))
	}
	n := make([]int64, len(res))
	for i, v := range res {
		switch x := v.(type) {
		case int64:
			n[i] = x
		case string:
			if i != 1 {
				return limits.Decision{}, fmt.Errorf("admit script: result %d is %q", i, x)
			}
		}
	}
	limit, _ := res[1].(string)
	d := limits.Decision{Allowed: n[0] == 1, Limit: strings.TrimSpace(limit), RetryAfter: time.Duration(n[2]) * time.Microsecond}
	if lim.RPM > 0 {
		d.Requests = limits.Status{Limit: lim.RPM, Remaining: int(n[4]), Reset: time.Duration(n[5]) * time.Microsecond}
	}
	if lim.TPM > 0 {
		d.Tokens = limits.Status{Limit: lim.TPM, Remaining: int(n[6]), Reset: time.Duration(n[7]) * time.Microsecond}
	}
	return d, nil
}

func newLease() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
