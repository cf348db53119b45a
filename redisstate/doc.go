// Package redisstate shares Switchyard's state across replicas through Redis (or
// Valkey: plain commands, EVALSHA and PUBLISH/SUBSCRIBE only), when
// state.redis.url is set.
//
// # What is shared, and how
//
//   - Limits (Limits, a limits.Backend): each subject's GCRA state is one hash
//     {r, t} (the rpm and tpm theoretical arrival times, in microseconds of Redis's
//     own clock, so that replicas with skewed clocks agree) and its concurrency a
//     sorted set of leases scored by expiry. An admission check is one EVALSHA of a
//     Lua script that checks every limit and charges all or nothing: atomic, one
//     round trip. The hash expires once the limits are full again, the lease set
//     after LeaseTTL; nothing needs cleaning up.
//   - Virtual models made through the admin API (VirtualModels): one hash,
//     source -> the config file's YAML of it. A change writes only the entries it
//     changed (two replicas changing different virtual models do not overwrite each
//     other), then publishes on the events channel.
//   - Admin breaker trips and resets (Breakers): one hash, provider/model -> the
//     last admin action with a sequence number and its end; each replica applies an
//     action once.
//   - Virtual keys (Keys): one hash, id -> record (hashed secret, never the secret).
//
// Every replica applies what it reads from Redis to its own in-memory copy (the
// router's virtual models and breakers, the key cache), which serves requests
// without a Redis round trip. A change is pushed on one pub/sub channel (the
// message names what changed; the receiver reloads that hash whole, so messages
// carry no state and cannot be applied out of order), and every replica also
// reloads everything each resync interval and whenever its subscription comes
// back, so that a missed message heals.
//
// # What is not shared: breaker failure counting
//
// Each replica counts its own upstream failures and opens its own breakers. A
// breaker protects the path from this replica to the upstream (its connection
// pool, its network, its DNS), and it must react within a few calls: sharing the
// counts would put a Redis round trip on every upstream outcome and let one
// replica's broken route open the breaker of healthy ones. An admin trip or reset
// is different: it is an operator's decision about the upstream itself, so it is
// applied on every replica.
//
// # Outage
//
// Every call is bounded by state.redis.timeout, and after a failure the request
// path tries Redis again at most once a second (the rest follow the policy at once,
// without waiting). Keys and virtual models keep their last known state. Limits
// follow state.redis.on_error: allow (the default) decides with this replica's own
// in-memory counters — calls keep flowing and each limit still holds per replica,
// so at most N× across N replicas, for the length of the outage; deny refuses
// every limited call with 429 and Retry-After: 1s. Allow is the default because a
// shared limit is a fairness and cost control, not a safety one: the providers'
// own 429s still guard the accounts, and failing closed would turn a Redis outage
// into an outage of every caller that has a limit. switchyard_state_redis_up and
// the readiness detail report the outage; recovery needs nothing: the next call
// that succeeds ends it, and the subscription reconnects and resyncs.
package redisstate
