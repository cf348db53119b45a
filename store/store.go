// Package store keeps Switchyard's runtime state — the virtual models created
// through the admin API — in a YAML file under the data directory, in the config
// file's own shape.
//
// Why a file and not a database: the state is small (tens of virtual models) and
// changes rarely, so each change rewrites the whole set. The write is crash-safe
// and durable: a temporary file in the same directory is written and fsynced, then
// renamed over the old one (an atomic replace on POSIX file systems), then the
// directory is fsynced. A crash leaves either the old set or the new one, never a
// torn file, and needs no dependency, recovery step or lock file.
package store

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/switchyard/switchyard/config"
)

// FileName is the store's file in the data directory.
const FileName = "virtual_models.yaml"

// VirtualModels stores API-managed virtual models.
type VirtualModels struct {
	mu   sync.Mutex
	path string
}

type document struct {
	VirtualModels []config.VirtualModel `yaml:"virtual_models"`
}

// Open prepares the store in dir, creating dir if needed.
func Open(dir string) (*VirtualModels, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir %s: %w", dir, err)
	}
	return &VirtualModels{path: filepath.Join(dir, FileName)}, nil
}

// Path is the store's file.
func (s *VirtualModels) Path() string { return s.path }

// Load returns the stored virtual models (none if the file does not exist yet).
func (s *VirtualModels) Load() ([]config.VirtualModel, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var doc document
	if err := ReadFile(s.path, &doc); err != nil {
		return nil, err
	}
	return doc.VirtualModels, nil
}

// ReadFile decodes path's YAML into doc, refusing unknown keys; a missing or
// empty file leaves doc as it is. Other stores in the data directory use it too.
func ReadFile(path string, doc any) error {
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(doc); err != nil && len(bytes.TrimSpace(raw)) > 0 {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Save replaces the stored set atomically and durably.
func (s *VirtualModels) Save(vms []config.VirtualModel) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, err := yaml.Marshal(document{VirtualModels: vms})
	if err != nil {
		return err
	}
	return WriteFile(s.path, append([]byte("# Virtual models created through the admin API. Written by Switchyard.\n"), data...))
}

// WriteFile replaces path's contents with data atomically and durably, as the
// package doc describes: a temporary file beside it (mode 0600), fsynced, renamed
// over path, then the directory fsynced. Other stores in the data directory use it too.
func WriteFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
