package usage

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/pgtest"
)

// wantIndexes are the indexes schema.go states, whatever schema a store began with.
var wantIndexes = []string{"usage_requests_request_id", "usage_requests_ts_dims"}

// A store made by the first released schema (an index per filter) is migrated
// to the stated indexes when a newer Switchyard opens it, on both stores: a
// released migration is never edited, so only a new one can change it.
func TestAStoreOfTheFirstSchemaGetsTheStatedIndexes(t *testing.T) {
	ctx := context.Background()
	cases := map[string]struct {
		open    func(t *testing.T) (old *sql.DB, reopen func() (Store, error))
		d       dialect
		indexes string
	}{
		"sqlite": {
			open: func(t *testing.T) (*sql.DB, func() (Store, error)) {
				path := filepath.Join(t.TempDir(), FileName)
				db, err := sql.Open("sqlite", "file:"+path)
				require.NoError(t, err)
				return db, func() (Store, error) { return OpenSQLite(ctx, path) }
			},
			d: sqliteDialect,
			indexes: `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'usage_requests'
				AND name NOT LIKE 'sqlite_%' ORDER BY name`,
		},
		"postgres": {
			open: func(t *testing.T) (*sql.DB, func() (Store, error)) {
				pg := pgtest.New(t)
				db, err := sql.Open("pgx", pg.DSN())
				require.NoError(t, err)
				return db, func() (Store, error) { return OpenPostgres(ctx, pg.DSN()) }
			},
			d: postgresDialect,
			indexes: `SELECT indexname FROM pg_indexes WHERE tablename = 'usage_requests'
				AND indexname NOT LIKE '%_pkey' ORDER BY indexname`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			fresh, reopenFresh := tc.open(t)
			defer fresh.Close()
			st, err := reopenFresh()
			require.NoError(t, err)
			require.Equal(t, wantIndexes, indexNames(t, fresh, tc.indexes), "a new store")
			st.Close()

			old, reopen := tc.open(t)
			defer old.Close()
			require.NoError(t, migrate(ctx, old, tc.d, migrations[:1]))
			require.Len(t, indexNames(t, old, tc.indexes), 5, "the first schema: an index per filter")
			st, err = reopen()
			require.NoError(t, err)
			defer st.Close()
			require.Equal(t, wantIndexes, indexNames(t, old, tc.indexes), "a store of the first schema")
			versions, err := schemaVersions(ctx, old)
			require.NoError(t, err)
			require.Equal(t, SchemaVersion(), versions[len(versions)-1])
		})
	}
}

func indexNames(t *testing.T, db *sql.DB, q string) []string {
	t.Helper()
	rows, err := db.Query(q)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		out = append(out, n)
	}
	require.NoError(t, rows.Err())
	return slices.Clip(out)
}

// Replicas starting at once on a fresh Postgres each open the store: every one
// of them succeeds and the schema is migrated once (found by starting two
// gateways together: CREATE TABLE IF NOT EXISTS raced outside the lock).
func TestReplicasStartingTogetherOnAFreshPostgresAllOpenTheStore(t *testing.T) {
	ctx := context.Background()
	pg := pgtest.New(t)
	const replicas = 8
	errs := make(chan error, replicas)
	start := make(chan struct{})
	for range replicas {
		go func() {
			<-start
			st, err := OpenPostgres(ctx, pg.DSN())
			if err == nil {
				err = st.Close()
			}
			errs <- err
		}()
	}
	close(start)
	for range replicas {
		require.NoError(t, <-errs)
	}
	db, err := sql.Open("pgx", pg.DSN())
	require.NoError(t, err)
	defer db.Close()
	versions, err := schemaVersions(ctx, db)
	require.NoError(t, err)
	want := make([]int, 0, len(migrations))
	for _, m := range migrations {
		want = append(want, m.version)
	}
	require.Equal(t, want, versions)
}
