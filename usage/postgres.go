package usage

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
)

// migrationLock is the advisory lock that lets one replica at a time migrate.
const migrationLock = `SELECT pg_advisory_xact_lock(1937074544)` // a fixed id for this lock

// OpenPostgres connects a pgx pool to dsn and creates or migrates the schema
// (several replicas may start at once: migrations take an advisory lock).
func OpenPostgres(ctx context.Context, dsn string) (Store, error) {
	if dsn == "" {
		return nil, fmt.Errorf("usage store: usage.dsn is required with usage.store: postgres")
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("usage store: usage.dsn: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("usage store: %w", err)
	}
	db := stdlib.OpenDBFromPool(pool)
	d := postgresDialect
	if err := migrate(ctx, db, d, migrations); err != nil {
		db.Close()
		pool.Close()
		return nil, err
	}
	s := newSQLStore(db, d)
	s.onClose = pool.Close
	return s, nil
}

var postgresDialect = dialect{name: StorePostgres, id: "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", rebind: dollars, lock: migrationLock}

// dollars turns ? placeholders into $1, $2, ...
func dollars(q string) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteByte(q[i])
	}
	return b.String()
}
