// Package keys manages virtual keys: API keys Switchyard issues to the services
// that call it, each with its own model allowlist, limits and optional expiry.
//
// A key's secret ("sk-sy-" + 32 random bytes, base64url) is shown once, when the
// key is created; Switchyard keeps only its SHA-256. A plain hash is enough (no
// salt, no slow KDF) because the secret is random with 256 bits of entropy, not a
// password: nothing can be guessed from the hash, and lookups stay one hash per
// request. Keys are listed by id and a short prefix of the secret.
package keys

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/switchyard/switchyard/limits"
	"github.com/switchyard/switchyard/usage"
)

// SecretPrefix starts every virtual key's secret.
const SecretPrefix = "sk-sy-"

// prefixLen is how much of a secret is kept in clear to name the key in lists.
const prefixLen = len(SecretPrefix) + 6

// All in an allowlist allows every model.
const All = "*"

// Key is a virtual key, as stored (never its secret).
type Key struct {
	// ID names the key in the admin API, logs and metrics ("key_" + 16 hex digits).
	ID string `yaml:"id" json:"id"`
	// Name is the admin's label for the key (e.g. the calling service).
	Name string `yaml:"name" json:"name"`
	// Prefix is the secret's first characters, to recognise it ("sk-sy-AbC123").
	Prefix string `yaml:"prefix" json:"prefix"`
	// Hash is the hex SHA-256 of the secret.
	Hash string `yaml:"sha256" json:"sha256"`
	// Models the key may call: "provider/model", "provider/*", a bare model name
	// (that model on any provider), a virtual model's name, or "*" for all.
	Models []string `yaml:"models" json:"models"`
	// Limits are the key's rpm, tpm and max_concurrency (0 = unlimited).
	Limits limits.Limits `yaml:"limits,omitempty" json:"limits,omitempty"`
	// ExpiresAt, when set, is when the key stops working.
	ExpiresAt time.Time `yaml:"expires_at,omitempty" json:"expires_at,omitempty"`
	// CreatedAt and UpdatedAt are when the key was made and last changed.
	CreatedAt time.Time `yaml:"created_at" json:"created_at"`
	UpdatedAt time.Time `yaml:"updated_at" json:"updated_at"`
	// RevokedAt, when set, is when the key was revoked: it is refused from then on
	// and kept for the record.
	RevokedAt time.Time `yaml:"revoked_at,omitempty" json:"revoked_at,omitempty"`
	// BudgetUSD, when positive, caps what the key may spend per BudgetPeriod
	// (enforced by the usage ledger).
	BudgetUSD float64 `yaml:"budget_usd,omitempty" json:"budget_usd,omitempty"`
	// BudgetPeriod is the budget's period ("day", "month"; empty: none).
	BudgetPeriod string `yaml:"budget_period,omitempty" json:"budget_period,omitempty"`
}

// Errors of key operations and checks.
var (
	// ErrNotFound: no key has that id.
	ErrNotFound = errors.New("key not found")
	// ErrUnknown: no key has that secret.
	ErrUnknown = errors.New("unknown key")
	// ErrRevoked: the key was revoked.
	ErrRevoked = errors.New("key revoked")
	// ErrContended: other changes kept changing the stored keys under this
	// one; nothing was changed, and it may be tried again.
	ErrContended = errors.New("the keys kept changing under this change: try it again")
	// ErrExpired: the key's expiry has passed.
	ErrExpired = errors.New("key expired")
	// ErrInvalid: a key spec does not validate (wrapped by *InvalidError).
	ErrInvalid = errors.New("invalid key")
)

// InvalidError is a key spec that does not validate; Field names the offending
// field ("name", "models", "limits.rpm", ...).
type InvalidError struct {
	Field, Reason string
}

func (e *InvalidError) Error() string { return e.Field + ": " + e.Reason }

// Is matches ErrInvalid.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// Active reports why k cannot be used at now (ErrRevoked, ErrExpired), or nil.
func (k *Key) Active(now time.Time) error {
	switch {
	case !k.RevokedAt.IsZero():
		return ErrRevoked
	case !k.ExpiresAt.IsZero() && !now.Before(k.ExpiresAt):
		return ErrExpired
	}
	return nil
}

// Allows reports whether k may call a model the client named asked, which
// resolved to provider's model (both empty for a virtual model, which only its
// own name or "*" allows).
func (k *Key) Allows(asked, provider, model string) bool {
	for _, m := range k.Models {
		switch {
		case m == All, m == asked:
			return true
		case provider == "":
		case m == provider+"/"+model, m == provider+"/*", m == model:
			return true
		}
	}
	return false
}

// AllowsAll reports a key that may call every model.
func (k *Key) AllowsAll() bool {
	for _, m := range k.Models {
		if m == All {
			return true
		}
	}
	return false
}

// Spec is what an admin sets on a key.
type Spec struct {
	Name         string
	Models       []string
	Limits       limits.Limits
	ExpiresAt    time.Time
	BudgetUSD    float64
	BudgetPeriod string
}

// maxName bounds a key's name (it appears in logs).
const maxName = 128

// Validate reports the first problem of s; now is for the expiry.
func (s *Spec) Validate(now time.Time) error {
	s.Name = strings.TrimSpace(s.Name)
	switch {
	case s.Name == "":
		return &InvalidError{"name", "a key needs a name"}
	case len(s.Name) > maxName:
		return &InvalidError{"name", fmt.Sprintf("at most %d bytes", maxName)}
	case len(s.Models) == 0:
		return &InvalidError{"models", `a key needs at least one model ("*" allows all)`}
	}
	for i, m := range s.Models {
		if strings.TrimSpace(m) == "" {
			return &InvalidError{fmt.Sprintf("models[%d]", i), "empty model name"}
		}
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"rpm", s.Limits.RPM}, {"tpm", s.Limits.TPM}, {"max_concurrency", s.Limits.MaxConcurrency}} {
		if f.v < 0 {
			return &InvalidError{"limits." + f.name, "must not be negative (0 = unlimited)"}
		}
	}
	if !s.ExpiresAt.IsZero() && !s.ExpiresAt.After(now) {
		return &InvalidError{"expires_at", "must be in the future"}
	}
	switch {
	case math.IsNaN(s.BudgetUSD) || math.IsInf(s.BudgetUSD, 0):
		return &InvalidError{"budget_usd", "must be a finite number of US dollars"}
	case s.BudgetUSD < 0:
		return &InvalidError{"budget_usd", "must not be negative"}
	case s.BudgetPeriod != "" && s.BudgetPeriod != usage.PeriodDay && s.BudgetPeriod != usage.PeriodMonth:
		return &InvalidError{"budget_period", fmt.Sprintf(`%q is not a budget period: "day" or "month" (UTC)`, s.BudgetPeriod)}
	case s.BudgetUSD > 0 && s.BudgetPeriod == "":
		return &InvalidError{"budget_period", `a budget needs its period: "day" or "month" (UTC)`}
	}
	return nil
}

// newSecret makes a secret, its hash and its shown prefix.
func newSecret() (secret, hash, prefix string) {
	var b [32]byte
	_, _ = rand.Read(b[:])
	secret = SecretPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	return secret, HashOf(secret), secret[:prefixLen]
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "key_" + hex.EncodeToString(b[:])
}

// HashOf is the stored form of a secret: its hex SHA-256.
func HashOf(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// sameHash compares two hashes in constant time.
func sameHash(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }
