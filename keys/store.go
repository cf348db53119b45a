package keys

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/switchyard/switchyard/store"
)

// Store keeps keys. The embedded one is a file in the data directory (File); a
// shared one (Redis) lets every replica see a change within a second.
type Store interface {
	// List returns every stored key, revoked ones included.
	List(ctx context.Context) ([]Key, error)
	// Put creates or replaces the key with k.ID.
	Put(ctx context.Context, k Key) error
	// Change reads the stored key with id, lets edit change it and stores the
	// result, as one step: a change made meanwhile elsewhere (another replica's
	// revocation) is seen by edit or makes the step start again with the new
	// record, never written over. edit may run more than once. ErrNotFound if no
	// key has id; edit's error comes back as it is, with nothing stored.
	Change(ctx context.Context, id string, edit func(*Key) error) (Key, error)
	// Delete removes the key with id (ErrNotFound if none).
	Delete(ctx context.Context, id string) error
	// Subscribe calls changed whenever the stored keys may have changed: after a
	// Put or Delete through this store and, for a shared store, after a change
	// made elsewhere (another replica) or a resync. changed re-reads with List; it
	// must not block for long. The returned func stops the calls.
	Subscribe(changed func()) (stop func())
}

// FileName is the embedded store's file in the data directory.
const FileName = "keys.yaml"

// File is the embedded Store: one YAML file in the data directory, rewritten
// atomically and durably on each change (store.WriteFile), mode 0600. It holds
// hashes only, never secrets. The file is read once and then kept as written
// (one process owns it: the embedded mode runs one replica), so that a change
// does not read and parse every key again: with a thousand keys that made each
// change ~0.3 s.
type File struct {
	mu     sync.Mutex
	path   string
	subs   map[int]func()
	next   int
	kept   []Key // the file's keys once read or written
	loaded bool
}

type fileDoc struct {
	Keys []Key `yaml:"keys"`
}

// OpenFile prepares the store in dir, creating dir if needed.
func OpenFile(dir string) (*File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir %s: %w", dir, err)
	}
	return &File{path: filepath.Join(dir, FileName), subs: map[int]func(){}}, nil
}

// Path is the store's file.
func (f *File) Path() string { return f.path }

// List implements Store.
func (f *File) List(context.Context) ([]Key, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.load()
}

// load returns a copy of the keys, read from the file the first time.
func (f *File) load() ([]Key, error) {
	if !f.loaded {
		var doc fileDoc
		if err := store.ReadFile(f.path, &doc); err != nil {
			return nil, err
		}
		if err := checkStored(doc.Keys); err != nil {
			return nil, fmt.Errorf("%s: %w", f.path, err)
		}
		f.kept, f.loaded = doc.Keys, true
	}
	return slices.Clone(f.kept), nil
}

// checkStored refuses stored keys a registry cannot hold: an id missing or
// given twice (a change would edit one and a lookup show the other), a hash
// that is no SHA-256 (no secret could match it).
func checkStored(ks []Key) error {
	seen := make(map[string]bool, len(ks))
	for i, k := range ks {
		switch {
		case k.ID == "":
			return fmt.Errorf("keys[%d] has no id", i)
		case seen[k.ID]:
			return fmt.Errorf("keys[%d]: the id %s is given twice", i, k.ID)
		case len(k.Hash) != 64 || strings.Trim(k.Hash, "0123456789abcdef") != "":
			return fmt.Errorf("keys[%d] (%s): sha256 is not a hex SHA-256", i, k.ID)
		}
		seen[k.ID] = true
	}
	return nil
}

func (f *File) save(ks []Key) error {
	data, err := yaml.Marshal(fileDoc{Keys: ks})
	if err != nil {
		return err
	}
	if err := store.WriteFile(f.path, append([]byte("# Virtual keys (hashes only) managed through the admin API. Written by Switchyard.\n"), data...)); err != nil {
		f.loaded = false // the write may have reached the file (a failed sync after the rename): read it again
		return err
	}
	f.kept, f.loaded = ks, true
	return nil
}

// Put implements Store.
func (f *File) Put(_ context.Context, k Key) error {
	if err := f.change(func(ks []Key) ([]Key, error) {
		for i := range ks {
			if ks[i].ID == k.ID {
				ks[i] = k
				return ks, nil
			}
		}
		return append(ks, k), nil
	}); err != nil {
		return err
	}
	f.notify()
	return nil
}

// Change implements Store.
func (f *File) Change(_ context.Context, id string, edit func(*Key) error) (Key, error) {
	var out Key
	if err := f.change(func(ks []Key) ([]Key, error) {
		i := slices.IndexFunc(ks, func(k Key) bool { return k.ID == id })
		if i < 0 {
			return nil, ErrNotFound
		}
		ks[i].Models = slices.Clone(ks[i].Models) // the kept keys share none of the edit's
		if err := edit(&ks[i]); err != nil {
			return nil, err
		}
		out = ks[i]
		return ks, nil
	}); err != nil {
		return Key{}, err
	}
	f.notify()
	return out, nil
}

// Delete implements Store.
func (f *File) Delete(_ context.Context, id string) error {
	if err := f.change(func(ks []Key) ([]Key, error) {
		for i := range ks {
			if ks[i].ID == id {
				return append(ks[:i], ks[i+1:]...), nil
			}
		}
		return nil, ErrNotFound
	}); err != nil {
		return err
	}
	f.notify()
	return nil
}

func (f *File) change(edit func([]Key) ([]Key, error)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	ks, err := f.load()
	if err != nil {
		return err
	}
	if ks, err = edit(ks); err != nil {
		return err
	}
	return f.save(ks)
}

// Subscribe implements Store: File sees only its own changes.
func (f *File) Subscribe(changed func()) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.next
	f.next++
	f.subs[id] = changed
	return func() {
		f.mu.Lock()
		delete(f.subs, id)
		f.mu.Unlock()
	}
}

func (f *File) notify() {
	f.mu.Lock()
	subs := make([]func(), 0, len(f.subs))
	for _, s := range f.subs {
		subs = append(subs, s)
	}
	f.mu.Unlock()
	for _, s := range subs {
		s()
	}
}

// Memory is a Store in memory (tests, and no data directory).
type Memory struct {
	mu   sync.Mutex
	keys []Key
	subs map[int]func()
	next int
}

// NewMemoryStore returns an empty in-memory Store.
func NewMemoryStore() *Memory { return &Memory{subs: map[int]func(){}} }

// List implements Store.
func (m *Memory) List(context.Context) ([]Key, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Key(nil), m.keys...), nil
}

// Put implements Store.
func (m *Memory) Put(_ context.Context, k Key) error {
	m.mu.Lock()
	found := false
	for i := range m.keys {
		if m.keys[i].ID == k.ID {
			m.keys[i], found = k, true
		}
	}
	if !found {
		m.keys = append(m.keys, k)
	}
	m.mu.Unlock()
	m.notify()
	return nil
}

// Change implements Store.
func (m *Memory) Change(_ context.Context, id string, edit func(*Key) error) (Key, error) {
	m.mu.Lock()
	i := slices.IndexFunc(m.keys, func(k Key) bool { return k.ID == id })
	if i < 0 {
		m.mu.Unlock()
		return Key{}, ErrNotFound
	}
	k := m.keys[i]
	k.Models = slices.Clone(k.Models)
	if err := edit(&k); err != nil {
		m.mu.Unlock()
		return Key{}, err
	}
	m.keys[i] = k
	m.mu.Unlock()
	m.notify()
	return k, nil
}

// Delete implements Store.
func (m *Memory) Delete(_ context.Context, id string) error {
	m.mu.Lock()
	for i := range m.keys {
		if m.keys[i].ID == id {
			m.keys = append(m.keys[:i], m.keys[i+1:]...)
			m.mu.Unlock()
			m.notify()
			return nil
		}
	}
	m.mu.Unlock()
	return ErrNotFound
}

// Subscribe implements Store.
func (m *Memory) Subscribe(changed func()) func() {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := m.next
	m.next++
	m.subs[id] = changed
	return func() {
		m.mu.Lock()
		delete(m.subs, id)
		m.mu.Unlock()
	}
}

func (m *Memory) notify() {
	m.mu.Lock()
	subs := make([]func(), 0, len(m.subs))
	for _, s := range m.subs {
		subs = append(subs, s)
	}
	m.mu.Unlock()
	for _, s := range subs {
		s()
	}
}
