package keys

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/testutil"
	"github.com/switchyard/switchyard/limits"
)

// fakeClock is a clock tests move by hand.
type fakeClock = testutil.Clock

func newClock() *fakeClock { return testutil.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) }

func TestAllows(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                   string
		models                 []string
		asked, provider, model string
		want                   bool
	}{
		{"star", []string{"*"}, "anything", "", "", true},
		{"provider/model asked as such", []string{"openai/gpt-4o"}, "openai/gpt-4o", "openai", "gpt-4o", true},
		{"provider/model asked bare", []string{"openai/gpt-4o"}, "gpt-4o", "openai", "gpt-4o", true},
		{"provider/model on another provider", []string{"openai/gpt-4o"}, "azure/gpt-4o", "azure", "gpt-4o", false},
		{"bare entry on any provider", []string{"gpt-4o"}, "azure/gpt-4o", "azure", "gpt-4o", true},
		{"provider wildcard", []string{"openai/*"}, "openai/o3", "openai", "o3", true},
		{"provider wildcard, other provider", []string{"openai/*"}, "azure/o3", "azure", "o3", false},
		{"virtual model by name", []string{"chain"}, "chain", "", "", true},
		{"virtual model not listed", []string{"openai/gpt-4o"}, "chain", "", "", false},
		{"a virtual model's target does not allow the virtual model", []string{"gpt-4o"}, "chain", "", "", false},
		{"unknown model", []string{"openai/gpt-4o"}, "nope", "", "", false},
		{"empty allowlist", nil, "gpt-4o", "openai", "gpt-4o", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			k := Key{Models: tt.models}
			require.Equal(t, tt.want, k.Allows(tt.asked, tt.provider, tt.model))
		})
	}
}

func TestSpecValidate(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		spec  Spec
		field string // "" = valid
	}{
		{"valid", Spec{Name: "svc", Models: []string{"*"}}, ""},
		{"no name", Spec{Name: "  ", Models: []string{"*"}}, "name"},
		{"long name", Spec{Name: strings.Repeat("x", 129), Models: []string{"*"}}, "name"},
		{"no models", Spec{Name: "svc"}, "models"},
		{"empty model", Spec{Name: "svc", Models: []string{"a", " "}}, "models[1]"},
		{"negative rpm", Spec{Name: "svc", Models: []string{"*"}, Limits: limits.Limits{RPM: -1}}, "limits.rpm"},
		{"past expiry", Spec{Name: "svc", Models: []string{"*"}, ExpiresAt: now}, "expires_at"},
		{"future expiry", Spec{Name: "svc", Models: []string{"*"}, ExpiresAt: now.Add(time.Second)}, ""},
		{"negative budget", Spec{Name: "svc", Models: []string{"*"}, BudgetUSD: -1}, "budget_usd"},
		{"NaN budget", Spec{Name: "svc", Models: []string{"*"}, BudgetUSD: math.NaN(), BudgetPeriod: "day"}, "budget_usd"},
		{"infinite budget", Spec{Name: "svc", Models: []string{"*"}, BudgetUSD: math.Inf(1), BudgetPeriod: "day"}, "budget_usd"},
		{"unknown period", Spec{Name: "svc", Models: []string{"*"}, BudgetUSD: 10, BudgetPeriod: "monthly"}, "budget_period"},
		{"period without a budget", Spec{Name: "svc", Models: []string{"*"}, BudgetPeriod: "week"}, "budget_period"},
		{"budget without a period", Spec{Name: "svc", Models: []string{"*"}, BudgetUSD: 10}, "budget_period"},
		{"daily budget", Spec{Name: "svc", Models: []string{"*"}, BudgetUSD: 10, BudgetPeriod: "day"}, ""},
		{"monthly budget", Spec{Name: "svc", Models: []string{"*"}, BudgetUSD: 0.5, BudgetPeriod: "month"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.spec.Validate(now)
			if tt.field == "" {
				require.NoError(t, err)
				return
			}
			var ie *InvalidError
			require.ErrorAs(t, err, &ie)
			require.ErrorIs(t, err, ErrInvalid)
			require.Equal(t, tt.field, ie.Field)
		})
	}
}

func TestRegistryLifecycle(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(t *testing.T) Store{
		"memory": func(*testing.T) Store { return NewMemoryStore() },
		"file": func(t *testing.T) Store {
			f, err := OpenFile(t.TempDir())
			require.NoError(t, err)
			return f
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			clk := newClock()
			r, err := NewRegistry(ctx, open(t), clk, nil)
			require.NoError(t, err)
			defer r.Close()

			k, secret, err := r.Create(ctx, Spec{Name: "billing", Models: []string{"openai/gpt-4o"},
				Limits: limits.Limits{RPM: 10}, ExpiresAt: clk.Now().Add(time.Hour)})
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(secret, SecretPrefix))
			require.Len(t, secret, len(SecretPrefix)+43, "32 random bytes, base64url")
			require.True(t, strings.HasPrefix(secret, k.Prefix))
			require.Len(t, k.Prefix, len(SecretPrefix)+6)
			require.Equal(t, HashOf(secret), k.Hash)
			require.True(t, strings.HasPrefix(k.ID, "key_"))

			got, err := r.Authenticate(secret)
			require.NoError(t, err)
			require.Equal(t, k.ID, got.ID)
			_, err = r.Authenticate(secret + "x")
			require.ErrorIs(t, err, ErrUnknown)
			_, err = r.Authenticate("not-a-key")
			require.ErrorIs(t, err, ErrUnknown)

			up, err := r.Update(ctx, k.ID, func(s *Spec) error {
				s.Limits.RPM, s.Models = 20, []string{"*"}
				return nil
			})
			require.NoError(t, err)
			require.Equal(t, 20, up.Limits.RPM)
			require.Equal(t, k.Hash, up.Hash, "an update keeps the secret")
			got, err = r.Authenticate(secret)
			require.NoError(t, err)
			require.True(t, got.AllowsAll())

			_, err = r.Update(ctx, k.ID, func(s *Spec) error { s.Name = ""; return nil })
			require.ErrorIs(t, err, ErrInvalid)
			_, err = r.Update(ctx, "key_nope", func(*Spec) error { return nil })
			require.ErrorIs(t, err, ErrNotFound)

			clk.Advance(time.Hour)
			_, err = r.Authenticate(secret)
			require.ErrorIs(t, err, ErrExpired)
			_, err = r.Update(ctx, k.ID, func(s *Spec) error { s.Name = "renamed"; return nil })
			require.NoError(t, err, "an unchanged, passed expiry does not block other changes")
			_, err = r.Update(ctx, k.ID, func(s *Spec) error { s.ExpiresAt = time.Time{}; return nil })
			require.NoError(t, err, "the expiry can be lifted")
			_, err = r.Authenticate(secret)
			require.NoError(t, err)

			rk, err := r.Revoke(ctx, k.ID)
			require.NoError(t, err)
			require.False(t, rk.RevokedAt.IsZero())
			_, err = r.Authenticate(secret)
			require.ErrorIs(t, err, ErrRevoked)
			_, err = r.Update(ctx, k.ID, func(*Spec) error { return nil })
			require.ErrorIs(t, err, ErrRevoked)
			list := r.List()
			require.Len(t, list, 1, "a revoked key stays listed")
			require.Equal(t, "renamed", list[0].Name)
		})
	}
}

func TestFileStorePersistsHashesOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	f, err := OpenFile(dir)
	require.NoError(t, err)
	r, err := NewRegistry(ctx, f, nil, nil)
	require.NoError(t, err)
	k, secret, err := r.Create(ctx, Spec{Name: "svc", Models: []string{"*"}, Limits: limits.Limits{TPM: 5}})
	require.NoError(t, err)
	r.Close()

	raw, err := os.ReadFile(filepath.Join(dir, FileName))
	require.NoError(t, err)
	require.NotContains(t, string(raw), secret)
	require.Contains(t, string(raw), k.Hash)
	info, err := os.Stat(filepath.Join(dir, FileName))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file left behind")

	// A restart finds the key again.
	f2, err := OpenFile(dir)
	require.NoError(t, err)
	r2, err := NewRegistry(ctx, f2, nil, nil)
	require.NoError(t, err)
	got, err := r2.Authenticate(secret)
	require.NoError(t, err)
	require.Equal(t, k, *got)
}

func TestRegistryFollowsTheStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := NewMemoryStore()
	a, err := NewRegistry(ctx, st, nil, nil)
	require.NoError(t, err)
	b, err := NewRegistry(ctx, st, nil, nil) // another replica on a shared store
	require.NoError(t, err)
	k, secret, err := a.Create(ctx, Spec{Name: "svc", Models: []string{"*"}})
	require.NoError(t, err)
	_, err = b.Authenticate(secret)
	require.NoError(t, err, "b heard of a's key")
	_, err = a.Revoke(ctx, k.ID)
	require.NoError(t, err)
	_, err = b.Authenticate(secret)
	require.ErrorIs(t, err, ErrRevoked, "b heard of the revocation")
	b.Close()
	require.NoError(t, st.Delete(ctx, k.ID))
	_, err = b.Get(k.ID)
	require.NoError(t, err, "a closed registry no longer follows")
	_, err = a.Get(k.ID)
	require.ErrorIs(t, err, ErrNotFound)
}

// TestBrokenStoreFileIsAnError: a keys file the registry cannot hold is
// refused at start, naming the file and the entry: an unknown member, an id
// missing or given twice (a change would edit one entry and a lookup show the
// other), a hash that is no SHA-256.
func TestBrokenStoreFileIsAnError(t *testing.T) {
	t.Parallel()
	const h = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	for _, tc := range []struct{ name, doc, want string }{
		{"an unknown member", "keys: [{nope: 1}]\n", ""},
		{"an id given twice", "keys:\n- {id: key_1, sha256: " + h + "}\n- {id: key_1, sha256: " + h + "}\n", "the id key_1 is given twice"},
		{"no id", "keys:\n- {sha256: " + h + "}\n", "keys[0] has no id"},
		{"a hash that is no SHA-256", "keys:\n- {id: key_1, sha256: zz}\n", "sha256 is not a hex SHA-256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, FileName), []byte(tc.doc), 0o600))
			f, err := OpenFile(dir)
			require.NoError(t, err)
			_, err = NewRegistry(context.Background(), f, nil, nil)
			require.ErrorContains(t, err, FileName)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// heldList is a Memory store whose next List, once armed, reads and then waits
// for release before answering: a reload whose read is older than a change.
type heldList struct {
	*Memory
	armed   chan struct{} // closed by the held List once it has read
	release chan struct{}
	once    sync.Once
}

func (h *heldList) List(ctx context.Context) ([]Key, error) {
	ks, err := h.Memory.List(ctx)
	held := false
	h.once.Do(func() { held = true })
	if held {
		close(h.armed)
		<-h.release
	}
	return ks, err
}

// TestAnOlderReloadNeverHidesANewKey: a reload that read the store before a key
// was made (a change notice, a resync) does not store its older read after the
// key's own reload: the key authenticates as soon as Create returns.
func TestAnOlderReloadNeverHidesANewKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, err := NewRegistry(ctx, NewMemoryStore(), nil, nil)
	require.NoError(t, err)
	st := &heldList{Memory: NewMemoryStore(), armed: make(chan struct{}), release: make(chan struct{})}
	r.store = st
	stale := make(chan error, 1)
	go func() { stale <- r.Reload(ctx) }()
	<-st.armed
	type made struct {
		secret string
		err    error
	}
	created := make(chan made, 1)
	go func() {
		_, secret, err := r.Create(ctx, Spec{Name: "svc", Models: []string{"*"}})
		created <- made{secret, err}
	}()
	var got made
	select {
	case got = <-created: // without serialised reloads Create is done first
		close(st.release)
	case <-time.After(100 * time.Millisecond): // it waits for the older reload
		close(st.release)
		got = <-created
	}
	require.NoError(t, <-stale)
	require.NoError(t, got.err)
	_, err = r.Authenticate(got.secret)
	require.NoError(t, err, "the older read was not stored last")
}

// failingList is a Memory store whose List fails once armed: a change is
// stored, then the reload after it cannot read.
type failingList struct {
	*Memory
	fail atomic.Bool
}

func (f *failingList) List(ctx context.Context) ([]Key, error) {
	if f.fail.Load() {
		return nil, errors.New("store unreachable")
	}
	return f.Memory.List(ctx)
}

// TestAStoredChangeStandsWhenTheReloadFails: once a change is stored it is made;
// a reload that fails after it is the reload's error (reported), not the
// change's: Create gives the secret, which exists nowhere else, and an admin
// retrying an "error" would make a second key.
func TestAStoredChangeStandsWhenTheReloadFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := &failingList{Memory: NewMemoryStore()}
	var reported atomic.Int32
	r, err := NewRegistry(ctx, st, nil, func(error) { reported.Add(1) })
	require.NoError(t, err)
	t.Cleanup(r.Close)
	st.fail.Store(true)
	k, secret, err := r.Create(ctx, Spec{Name: "svc", Models: []string{"*"}})
	require.NoError(t, err)
	require.NotEmpty(t, secret)
	_, err = r.Update(ctx, k.ID, func(s *Spec) error { s.Name = "renamed"; return nil })
	require.NoError(t, err)
	_, err = r.Revoke(ctx, k.ID)
	require.NoError(t, err)
	require.Positive(t, reported.Load(), "the failed reloads were reported")
	st.fail.Store(false)
	require.NoError(t, r.Reload(ctx))
	_, err = r.Authenticate(secret)
	require.ErrorIs(t, err, ErrRevoked, "the key was made, renamed and revoked")
	got, err := r.Get(k.ID)
	require.NoError(t, err)
	require.Equal(t, "renamed", got.Name)
}

// BenchmarkCreateAmongAThousandKeys: one more key in a file store that holds a
// thousand (each change used to read and parse the whole file again).
func BenchmarkCreateAmongAThousandKeys(b *testing.B) {
	f, err := OpenFile(b.TempDir())
	require.NoError(b, err)
	r, err := NewRegistry(context.Background(), f, nil, nil)
	require.NoError(b, err)
	spec := Spec{Name: "svc", Models: []string{"*"}, Limits: limits.Limits{RPM: 60}}
	for range 1000 {
		_, _, err := r.Create(context.Background(), spec)
		require.NoError(b, err)
	}
	b.ResetTimer()
	for b.Loop() {
		_, _, err := r.Create(context.Background(), spec)
		require.NoError(b, err)
	}
}
