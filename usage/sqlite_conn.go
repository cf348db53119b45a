package usage

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"modernc.org/libc"
	"modernc.org/libc/sys/types"
	sqlite3 "modernc.org/sqlite/lib"
)

// liteConn is the SQLite store's writing connection, driven through SQLite's
// own API (modernc.org/sqlite/lib) rather than database/sql. Measured against
// the driver's prepared statements (BenchmarkSQLiteWrite), two costs go:
//   - the driver opens every connection SQLITE_OPEN_FULLMUTEX, so each of a
//     row's 26 bound values took and released the connection's mutex; this one
//     is opened SQLITE_OPEN_NOMUTEX (only the store's writer uses it, under
//     sqlStore.wmu);
//   - the driver copies each text value into a C allocation of its own, binds
//     it, unbinds it after the step and frees it; here one statement's texts
//     are copied into one reused C buffer and bound SQLITE_STATIC.
//
// Its rows are appendRow's, as the Postgres store's are, so both stores keep
// one encoding of a record (TestLiteConnStoresWhatTheDriverStores holds the
// two SQLite paths to the same rows).
type liteConn struct {
	tls                     *libc.TLS
	db                      uintptr
	begin, commit, rollback uintptr
	stmts                   map[int]uintptr // the prepared INSERT of n rows, by n
	buf                     uintptr         // C memory for one statement's text values
	bufCap                  int
	vals                    []value
	// ctx is the write's (or the open's), for liteBusy, which runs on the
	// writing goroutine, and for err; id is the conn's key in liteConns.
	ctx context.Context
	id  uintptr
}

// liteConns finds a liteConn by its id, the argument SQLite hands liteBusy
// (an id, not the handle: a closed handle's address is soon another's).
var (
	liteConns  sync.Map
	liteConnID atomic.Uint64
)

// Busy waits: up to liteBusyTimeout in steps of liteBusyStep, ended early
// when the write's context is done (a stalled file must not hold Close past
// its deadline).
const (
	liteBusyTimeout = 5 * time.Second
	liteBusyStep    = 10 * time.Millisecond
)

type liteBusyFunc = func(tls *libc.TLS, id uintptr, count int32) int32

// liteBusy is the connection's busy handler: 1 retries, 0 gives up (the
// statement fails SQLITE_BUSY).
func liteBusy(_ *libc.TLS, id uintptr, count int32) int32 {
	v, ok := liteConns.Load(id)
	if !ok || time.Duration(count)*liteBusyStep >= liteBusyTimeout {
		return 0
	}
	ctx := v.(*liteConn).ctx
	if ctx == nil {
		ctx = context.Background()
	}
	t := time.NewTimer(liteBusyStep)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return 0
	case <-t.C:
		return 1
	}
}

// openLiteConn opens name (the URI the store's database/sql pool opened) for
// writing; its journal mode (WAL) is the file's already. A wait for a locked
// file ends with ctx.
func openLiteConn(ctx context.Context, name string) (*liteConn, error) {
	c := &liteConn{tls: libc.NewTLS(), stmts: map[int]uintptr{}, id: uintptr(liteConnID.Add(1)), ctx: ctx}
	defer func() { c.ctx = nil }()
	cname, err := libc.CString(name)
	if err != nil {
		c.tls.Close()
		return nil, err
	}
	pdb := libc.Xmalloc(c.tls, 8)
	rc := sqlite3.Xsqlite3_open_v2(c.tls, cname, pdb, sqlite3.SQLITE_OPEN_READWRITE|sqlite3.SQLITE_OPEN_NOMUTEX|sqlite3.SQLITE_OPEN_URI, 0)
	c.db = *(*uintptr)(unsafe.Add(nil, pdb))
	libc.Xfree(c.tls, pdb)
	libc.Xfree(c.tls, cname)
	if rc != sqlite3.SQLITE_OK {
		err = c.err("open", rc)
		c.close()
		return nil, err
	}
	sqlite3.Xsqlite3_extended_result_codes(c.tls, c.db, 1)
	liteConns.Store(c.id, c)
	sqlite3.Xsqlite3_busy_handler(c.tls, c.db, *(*uintptr)(unsafe.Pointer(&struct{ f liteBusyFunc }{liteBusy})), c.id)
	if err := c.run("PRAGMA synchronous = NORMAL"); err != nil {
		c.close()
		return nil, err
	}
	// The writer appends: the pages it needs again are the right edges of the
	// table and its indexes. SQLite's default cache (2 MB) filled with pages
	// it never reads again and held ~4 MB of the process (the bench at 1 KB,
	// c=32: 43 -> 39 MB); BenchmarkSQLiteWrite is no slower with 256 KiB.
	if err := c.run("PRAGMA cache_size = -256"); err != nil {
		c.close()
		return nil, err
	}
	for _, s := range []struct {
		p   *uintptr
		sql string
	}{{&c.begin, "BEGIN"}, {&c.commit, "COMMIT"}, {&c.rollback, "ROLLBACK"}} {
		if *s.p, err = c.prepare(s.sql); err != nil {
			c.close()
			return nil, err
		}
	}
	return c, nil
}

// write stores batch in one transaction, with INSERTs of up to rowsPerInsert
// rows (insertFor(n) is the statement of n); on any error nothing of it is
// kept, and the caller closes the connection.
func (c *liteConn) write(ctx context.Context, batch []Record, insertFor func(int) string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	stop := c.interruptOnDone(ctx)
	defer stop()
	c.ctx = ctx
	defer func() { c.ctx = nil }()
	if err := c.step(c.begin, "BEGIN"); err != nil {
		return err
	}
	for len(batch) > 0 {
		// SQLite forgets an interrupt that arrives between statements.
		if err := ctx.Err(); err != nil {
			c.abort()
			return err
		}
		n := min(len(batch), rowsPerInsert)
		c.vals = c.vals[:0]
		for i := range batch[:n] {
			c.vals = appendRow(c.vals, &batch[i])
		}
		st := c.stmts[n]
		if st == 0 {
			var err error
			if st, err = c.prepare(insertFor(n)); err != nil {
				c.abort()
				return err
			}
			c.stmts[n] = st
		}
		if err := c.bind(st, c.vals); err != nil {
			c.abort()
			return err
		}
		if err := c.step(st, "INSERT"); err != nil {
			c.abort()
			return err
		}
		batch = batch[n:]
	}
	if err := c.step(c.commit, "COMMIT"); err != nil {
		c.abort()
		return err
	}
	return nil
}

// abort rolls back the open transaction (an interrupted or failed statement
// may already have).
func (c *liteConn) abort() {
	if sqlite3.Xsqlite3_get_autocommit(c.tls, c.db) == 0 {
		_ = c.step(c.rollback, "ROLLBACK")
	}
}

// bind binds vals (appendRow's) to st, in order.
func (c *liteConn) bind(st uintptr, vals []value) error {
	size := 1 // an empty text still needs a pointer: NULL would bind NULL
	for i := range vals {
		size += len(vals[i].s)
	}
	if err := c.grow(size); err != nil {
		return err
	}
	mem := unsafe.Slice((*byte)(unsafe.Add(nil, c.buf)), c.bufCap)
	off := 0
	for i := range vals {
		v, idx := &vals[i], int32(i+1)
		var rc int32
		switch v.kind {
		case vInt:
			rc = sqlite3.Xsqlite3_bind_int64(c.tls, st, idx, v.i)
		case vFloat:
			rc = sqlite3.Xsqlite3_bind_double(c.tls, st, idx, v.f)
		case vText:
			copy(mem[off:], v.s)
			// SQLITE_STATIC (0): the buffer outlives the statement's step.
			rc = sqlite3.Xsqlite3_bind_text(c.tls, st, idx, c.buf+uintptr(off), int32(len(v.s)), 0)
			off += len(v.s)
		default:
			rc = sqlite3.Xsqlite3_bind_null(c.tls, st, idx)
		}
		if rc != sqlite3.SQLITE_OK {
			return c.err("bind", rc)
		}
	}
	return nil
}

// grow makes c.buf hold at least n bytes.
func (c *liteConn) grow(n int) error {
	if n <= c.bufCap {
		return nil
	}
	n = max(n, 2*c.bufCap, 16<<10)
	p := libc.Xmalloc(c.tls, types.Size_t(n))
	if p == 0 {
		return fmt.Errorf("usage store: cannot allocate %d bytes", n)
	}
	if c.buf != 0 {
		libc.Xfree(c.tls, c.buf)
	}
	c.buf, c.bufCap = p, n
	return nil
}

// step runs st to its end and resets it.
func (c *liteConn) step(st uintptr, what string) error {
	rc := sqlite3.Xsqlite3_step(c.tls, st)
	for rc == sqlite3.SQLITE_ROW {
		rc = sqlite3.Xsqlite3_step(c.tls, st)
	}
	sqlite3.Xsqlite3_reset(c.tls, st)
	if rc != sqlite3.SQLITE_DONE {
		return c.err(what, rc)
	}
	return nil
}

func (c *liteConn) prepare(sql string) (uintptr, error) {
	z, err := libc.CString(sql)
	if err != nil {
		return 0, err
	}
	defer libc.Xfree(c.tls, z)
	pst := libc.Xmalloc(c.tls, 8)
	defer libc.Xfree(c.tls, pst)
	if rc := sqlite3.Xsqlite3_prepare_v3(c.tls, c.db, z, -1, sqlite3.SQLITE_PREPARE_PERSISTENT, pst, 0); rc != sqlite3.SQLITE_OK {
		return 0, c.err("prepare", rc)
	}
	return *(*uintptr)(unsafe.Add(nil, pst)), nil
}

// run prepares, steps and finalizes one statement.
func (c *liteConn) run(sql string) error {
	st, err := c.prepare(sql)
	if err != nil {
		return err
	}
	defer sqlite3.Xsqlite3_finalize(c.tls, st)
	return c.step(st, sql)
}

// interruptOnDone interrupts the connection's statement when ctx ends (a
// stalled write, Close's deadline); stop waits for an interrupt under way, so
// that none reaches a later write.
func (c *liteConn) interruptOnDone(ctx context.Context) (stop func()) {
	if ctx.Done() == nil {
		return func() {}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	db := c.db
	cancel := context.AfterFunc(ctx, func() {
		defer wg.Done()
		tls := libc.NewTLS() // not c.tls: the write runs on it
		sqlite3.Xsqlite3_interrupt(tls, db)
		tls.Close()
	})
	return func() {
		if cancel() {
			wg.Done()
		}
		wg.Wait()
	}
}

func (c *liteConn) err(what string, rc int32) error {
	msg := "unknown error"
	if c.db != 0 {
		msg = libc.GoString(sqlite3.Xsqlite3_errmsg(c.tls, c.db))
	}
	if c.ctx != nil && c.ctx.Err() != nil { // interrupted, or a busy wait cut short
		return fmt.Errorf("usage store %s: %w (%s)", what, context.Cause(c.ctx), msg)
	}
	return fmt.Errorf("usage store %s: %s (%d)", what, msg, rc)
}

// close finalizes the statements and closes the connection (rolling back a
// transaction left open).
func (c *liteConn) close() {
	if c.db != 0 {
		for _, st := range c.stmts {
			sqlite3.Xsqlite3_finalize(c.tls, st)
		}
		for _, st := range []uintptr{c.begin, c.commit, c.rollback} {
			if st != 0 {
				sqlite3.Xsqlite3_finalize(c.tls, st)
			}
		}
		liteConns.Delete(c.id)
		sqlite3.Xsqlite3_close_v2(c.tls, c.db)
		c.db = 0
	}
	if c.buf != 0 {
		libc.Xfree(c.tls, c.buf)
		c.buf = 0
	}
	c.tls.Close()
}
