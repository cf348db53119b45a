package usage

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	_ "modernc.org/sqlite" // pure Go: the static binary stays static (CGO_ENABLED=0)
)

// OpenSQLite opens (creating and migrating) the SQLite store at path, in WAL
// mode: readers (admin queries) never block the writer.
func OpenSQLite(ctx context.Context, path string) (Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("usage store: %w", err)
	}
	q := url.Values{}
	for _, p := range []string{"journal_mode(WAL)", "synchronous(NORMAL)", "busy_timeout(5000)", "foreign_keys(ON)"} {
		q.Add("_pragma", p)
	}
	name := "file:" + path
	db, err := sql.Open("sqlite", name+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("usage store %s: %w", path, err)
	}
	db.SetMaxOpenConns(4)
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		db.Close()
		return nil, fmt.Errorf("usage store %s: %w", path, err)
	}
	if mode != "wal" {
		db.Close()
		return nil, fmt.Errorf("usage store %s: journal mode is %q, want wal", path, mode)
	}
	d := sqliteDialect
	if err := migrate(ctx, db, d, migrations); err != nil {
		db.Close()
		return nil, err
	}
	s := newSQLStore(db, d)
	s.liteName = name
	return s, nil
}

// sqliteDialect: OR FAIL, because a statement of many rows then needs no
// statement journal to undo its own rows on an error (a fifth of a row's
// cost): Write rolls the whole batch back instead.
var sqliteDialect = dialect{name: StoreSQLite, id: "INTEGER PRIMARY KEY", rebind: func(s string) string { return s }, insertMode: "OR FAIL "}
