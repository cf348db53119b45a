// Package limits enforces rate limits: requests per minute (rpm), tokens per
// minute (tpm) and concurrent calls (max_concurrency), for virtual keys and for
// provider accounts (targets).
//
// # Algorithm: GCRA
//
// Each rate limit is a GCRA (generic cell rate algorithm, the virtual-scheduling
// form of a token bucket): a limit of N units per period T spends one unit every
// I = T/N, and its whole state is one instant, the theoretical arrival time (TAT)
// at which the limit is fully replenished. A call costing c units is admitted when
//
//	max(TAT, now) + c·I − now ≤ T
//
// and then TAT becomes max(TAT, now) + c·I. Why GCRA and not a fixed window:
//
//   - No edge bursts. A fixed window of one minute admits N at 00:59 and N more at
//     01:00 — 2N within a second. GCRA has no window edge to straddle: a caller may
//     spend the whole allowance at once (burst N), but after that room comes back
//     continuously, one unit every T/N. The most a limit admits in any span s is
//     N + N·s/T: never 2N in a short burst, and the long-run rate is exactly N/T.
//   - One number per limit, no log of timestamps: O(1) memory, and a check is
//     one read-modify-write, which a shared backend (Redis) makes atomic with one
//     short script and an expiry of T (an idle limit is a full one).
//   - Weights and corrections are exact: tpm spends c = tokens, and correcting an
//     estimate by d tokens moves TAT by d·I.
//   - OpenAI's headers fall out directly: remaining = ⌊(T − (TAT − now)) / I⌋,
//     reset (until fully replenished) = TAT − now, and a refused call's wait =
//     max(TAT, now) + c·I − now − T.
//
// # Tokens per minute
//
// The real token count of a call is known only when its answer ends, so a call is
// admitted on an estimate (see EstimateTokens) and corrected when it ends
// (Grant.Done with the usage the answer reported): the difference is charged or
// given back. A call whose estimate alone exceeds the limit is charged the whole
// limit at admission (so it passes when the limit is full, instead of never) and
// the rest at the correction.
//
// # Concurrency
//
// max_concurrency counts calls admitted and not yet ended; Grant.Done frees the
// slot. Callers must call Done exactly once whatever happens — answer, error,
// cancellation or panic (a deferred call); further calls are ignored.
//
// # Backends
//
// A Backend holds the state. Memory is the embedded, per-process one: with
// several replicas each process counts alone, so the real limit is N× the
// configured one; a shared Backend (Redis) makes one limit hold across replicas.
package limits
