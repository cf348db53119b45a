package usage

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// sqlStore is the Store of both SQL databases (SQLite and Postgres, through
// database/sql); d says what differs.
type sqlStore struct {
	db     *sql.DB
	d      dialect
	insert string
	// Writes go through one connection of their own, at the driver's level:
	// database/sql's per-statement conversions and locks were a fifth of a
	// record's cost. dstmts holds its prepared INSERT of n rows by n (parsing a
	// statement of 50×26 placeholders costs more than storing its rows).
	wmu    sync.Mutex
	wconn  *sql.Conn
	dstmts map[int]driver.Stmt
	// liteName, for SQLite, is the file's URI: writes then go through a
	// liteConn of their own (lconn) instead.
	liteName string
	lconn    *liteConn
	closed   atomic.Bool
	// onClose releases what is under db (Postgres's pool).
	onClose func()
}

const columns = `ts, request_id, surface, endpoint, stream, key_id, model, virtual_model, provider, target_model,
	attempts, attempt_count, failovers, resumes, hedged, prompt_tokens, completion_tokens, cached_tokens,
	cache_write_tokens, reasoning_tokens, tokens_estimated, cost_usd, latency_ms, ttft_ms, status, error_code`

// rowsPerInsert is how many records one INSERT statement carries (26 values
// each: far below SQLite's and Postgres's limits on parameters).
const rowsPerInsert = 50

var columnCount = strings.Count(columns, ",") + 1

// insertFor is the INSERT of n rows.
func (s *sqlStore) insertFor(n int) string {
	if n == rowsPerInsert && s.insert != "" {
		return s.insert
	}
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", columnCount), ", ") + ")"
	return s.d.rebind("INSERT " + s.d.insertMode + "INTO usage_requests (" + columns + ") VALUES " + strings.TrimSuffix(strings.Repeat(row+", ", n), ", "))
}

func newSQLStore(db *sql.DB, d dialect) *sqlStore {
	s := &sqlStore{db: db, d: d}
	s.insert = s.insertFor(rowsPerInsert)
	return s
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func (s *sqlStore) Write(ctx context.Context, batch []Record) error {
	if s.closed.Load() {
		return ErrClosed
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.closed.Load() { // Close ran while this write waited for the lock
		return ErrClosed
	}
	if s.liteName != "" {
		return s.writeLite(ctx, batch)
	}
	if s.wconn == nil {
		c, err := s.db.Conn(ctx)
		if err != nil {
			return err
		}
		s.wconn, s.dstmts = c, map[int]driver.Stmt{}
	}
	err := s.wconn.Raw(func(dc any) error {
		tx, err := dc.(driver.ConnBeginTx).BeginTx(ctx, driver.TxOptions{})
		if err != nil {
			return err
		}
		vals := make([]value, 0, columnCount)
		nv := make([]driver.NamedValue, 0, columnCount*min(len(batch), rowsPerInsert))
		for len(batch) > 0 {
			n := min(len(batch), rowsPerInsert)
			nv = nv[:0]
			for i := range batch[:n] {
				vals = appendRow(vals[:0], &batch[i])
				for _, v := range vals {
					nv = append(nv, driver.NamedValue{Ordinal: len(nv) + 1, Value: v.any()})
				}
			}
			st := s.dstmts[n]
			if st == nil {
				if st, err = dc.(driver.ConnPrepareContext).PrepareContext(ctx, s.insertFor(n)); err != nil {
					_ = tx.Rollback()
					return err
				}
				s.dstmts[n] = st
			}
			if _, err := st.(driver.StmtExecContext).ExecContext(ctx, nv); err != nil {
				_ = tx.Rollback()
				return err
			}
			batch = batch[n:]
		}
		return tx.Commit()
	})
	if err != nil { // the connection may be broken: the next batch takes a fresh one
		s.dropWriteConn()
	}
	return err
}

// writeLite is Write on SQLite's own API (see liteConn).
func (s *sqlStore) writeLite(ctx context.Context, batch []Record) error {
	if s.lconn == nil {
		c, err := openLiteConn(ctx, s.liteName)
		if err != nil {
			return err
		}
		s.lconn = c
	}
	err := s.lconn.write(ctx, batch, s.insertFor)
	if err != nil { // the next batch takes a fresh connection
		s.lconn.close()
		s.lconn = nil
	}
	return err
}

// dropWriteConn closes the writer's connection and its statements.
func (s *sqlStore) dropWriteConn() {
	if s.lconn != nil {
		s.lconn.close()
		s.lconn = nil
	}
	if s.wconn == nil {
		return
	}
	_ = s.wconn.Raw(func(any) error {
		for _, st := range s.dstmts {
			st.Close()
		}
		return nil
	})
	_ = s.wconn.Close()
	s.wconn, s.dstmts = nil, nil
}

// value is one column's value of a record: an int64, a float64, a text or
// NULL, unboxed (SQLite's writer binds each by its kind).
type value struct {
	kind valueKind
	i    int64
	f    float64
	s    string
}

type valueKind uint8

const (
	vNull valueKind = iota
	vInt
	vFloat
	vText
)

func vi(i int64) value   { return value{kind: vInt, i: i} }
func vf(f float64) value { return value{kind: vFloat, f: f} }
func vs(s string) value  { return value{kind: vText, s: s} }
func vb(b bool) value    { return vi(b2i(b)) }

// any is v as the drivers take it (int64, float64, string, nil).
func (v value) any() any {
	switch v.kind {
	case vInt:
		return v.i
	case vFloat:
		return v.f
	case vText:
		return v.s
	}
	return nil
}

// appendRow adds r's values, in columns' order.
func appendRow(vals []value, r *Record) []value {
	ttft, cost := value{}, value{}
	if r.TTFT > 0 {
		ttft = vf(millis(r.TTFT))
	}
	if r.CostUSD != nil {
		cost = vf(*r.CostUSD)
	}
	t := r.Tokens
	return append(vals, vi(r.Time.UnixMicro()), vs(r.RequestID), vs(r.Surface), vs(r.Endpoint), vb(r.Stream), vs(r.KeyID),
		vs(r.Model), vs(r.VirtualModel), vs(r.Provider), vs(r.TargetModel), vs(encodeAttempts(r.Attempts)), vi(int64(len(r.Attempts))),
		vi(int64(r.Failovers)), vi(int64(r.Resumes)), vb(r.Hedged), vi(t.Prompt), vi(t.Completion), vi(t.Cached), vi(t.CacheWrite),
		vi(t.Reasoning), vb(t.Estimated), cost, vf(millis(r.Latency)), ttft, vi(int64(r.Status)), vs(r.ErrorCode))
}

// where builds the filter's condition; it starts with the time range, so that
// the planner reads usage_requests_ts_dims (TestQueriesUseIndexes).
func (s *sqlStore) where(f Filter) (string, []any) {
	var conds []string
	var args []any
	add := func(cond string, arg any) { conds = append(conds, cond); args = append(args, arg) }
	if !f.From.IsZero() {
		add("ts >= ?", f.From.UnixMicro())
	}
	if !f.To.IsZero() {
		add("ts < ?", f.To.UnixMicro())
	}
	if f.KeyID != "" {
		add("key_id = ?", f.KeyID)
	}
	if f.Model != "" {
		add("model = ?", f.Model)
	}
	if f.Provider != "" {
		add("provider = ?", f.Provider)
	}
	if f.Status != 0 {
		add("status = ?", f.Status)
	}
	if f.RequestID != "" {
		add("request_id = ?", f.RequestID)
	}
	if f.ErrorsOnly {
		conds = append(conds, "(status >= 400 OR error_code <> '')")
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

func (s *sqlStore) Query(ctx context.Context, q Query) ([]Group, error) {
	for _, g := range q.GroupBy {
		if _, ok := dimensions[g]; !ok {
			return nil, fmt.Errorf("%w: group by %q (want key, model, provider, status, virtual_model, endpoint or target)", ErrBadQuery, g)
		}
	}
	if q.Bucket != BucketNone && q.Bucket != BucketHour && q.Bucket != BucketDay {
		return nil, fmt.Errorf("%w: bucket %q (want hour or day)", ErrBadQuery, q.Bucket)
	}
	query, args := s.querySQL(q.Filter)
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	agg := newAggregator(q)
	limit := q.MaxRows
	if limit <= 0 {
		limit = DefaultMaxQueryRows
	}
	for n := 0; rows.Next(); n++ {
		if n == limit {
			return nil, fmt.Errorf("%w: the range holds more than %d requests: narrow it (since, or start_time and end_time) or filter it (key_id, model, provider)", ErrBadQuery, limit)
		}
		var r aggRow
		var cost, ttft sql.NullFloat64
		var est int
		if err := rows.Scan(&r.ts, &r.key, &r.model, &r.provider, &r.targetModel, &r.virtualModel, &r.endpoint, &r.status,
			&r.errorCode, &r.tokens.Prompt, &r.tokens.Completion, &r.tokens.Cached, &r.tokens.CacheWrite, &r.tokens.Reasoning,
			&est, &cost, &r.latencyMS, &ttft); err != nil {
			return nil, err
		}
		r.tokens.Estimated = est != 0
		r.cost, r.priced = cost.Float64, cost.Valid
		r.ttftMS, r.hasTTFT = ttft.Float64, ttft.Valid
		agg.add(&r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return agg.result(), nil
}

// ErrBadQuery is a query the store cannot answer as asked.
var ErrBadQuery = errors.New("usage: bad query")

const (
	defaultPageSize = 50
	maxPageSize     = 1000
)

// querySQL is Query's statement: the rows of the filter's range, aggregated here.
func (s *sqlStore) querySQL(f Filter) (string, []any) {
	where, args := s.where(f)
	return s.d.rebind(`SELECT ts, key_id, model, provider, target_model, virtual_model, endpoint,
		status, error_code, prompt_tokens, completion_tokens, cached_tokens, cache_write_tokens, reasoning_tokens,
		tokens_estimated, cost_usd, latency_ms, ttft_ms FROM usage_requests` + where), args
}

// listSQL is List's statement for a page of size (one more row is read, to know
// whether another page follows).
func (s *sqlStore) listSQL(f ListFilter, size int) (string, []any, error) {
	where, args := s.where(f.Filter)
	if f.PageToken != "" {
		ts, id, err := decodePageToken(f.PageToken)
		if err != nil {
			return "", nil, err
		}
		cond := "(ts < ? OR (ts = ? AND id < ?))"
		if where == "" {
			where = " WHERE " + cond
		} else {
			where += " AND " + cond
		}
		args = append(args, ts, ts, id)
	}
	return s.d.rebind(`SELECT id, ` + columns + ` FROM usage_requests` + where +
		` ORDER BY ts DESC, id DESC LIMIT ` + strconv.Itoa(size+1)), args, nil
}

// spendSQL is SpendSince's statement.
const spendSQL = `SELECT key_id, SUM(cost_usd) FROM usage_requests WHERE ts >= ? AND cost_usd IS NOT NULL GROUP BY key_id`

func (s *sqlStore) List(ctx context.Context, f ListFilter) (Page, error) {
	size := f.PageSize
	if size <= 0 {
		size = defaultPageSize
	}
	size = min(size, maxPageSize)
	query, args, err := s.listSQL(f, size)
	if err != nil {
		return Page{}, err
	}
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return Page{}, err
	}
	defer rows.Close()
	var page Page
	var lastTS, lastID int64
	for rows.Next() {
		if len(page.Records) == size {
			page.NextPageToken = encodePageToken(lastTS, lastID)
			break
		}
		r, ts, id, err := scanRecord(rows)
		if err != nil {
			return Page{}, err
		}
		page.Records = append(page.Records, r)
		lastTS, lastID = ts, id
	}
	return page, rows.Err()
}

func scanRecord(rows *sql.Rows) (Record, int64, int64, error) {
	var r Record
	var id, ts int64
	var stream, hedged, est, attemptCount int
	var attempts string
	var cost, ttft sql.NullFloat64
	var latency float64
	t := &r.Tokens
	err := rows.Scan(&id, &ts, &r.RequestID, &r.Surface, &r.Endpoint, &stream, &r.KeyID, &r.Model, &r.VirtualModel,
		&r.Provider, &r.TargetModel, &attempts, &attemptCount, &r.Failovers, &r.Resumes, &hedged, &t.Prompt, &t.Completion,
		&t.Cached, &t.CacheWrite, &t.Reasoning, &est, &cost, &latency, &ttft, &r.Status, &r.ErrorCode)
	if err != nil {
		return r, 0, 0, err
	}
	r.Time = time.UnixMicro(ts).UTC()
	r.Stream, r.Hedged, t.Estimated = stream != 0, hedged != 0, est != 0
	r.Attempts = decodeAttempts(attempts)
	if cost.Valid {
		c := cost.Float64
		r.CostUSD = &c
	}
	r.Latency = time.Duration(latency * float64(time.Millisecond))
	if ttft.Valid {
		r.TTFT = time.Duration(ttft.Float64 * float64(time.Millisecond))
	}
	return r, ts, id, nil
}

func encodePageToken(ts, id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(ts, 10) + ":" + strconv.FormatInt(id, 10)))
}

func decodePageToken(tok string) (int64, int64, error) {
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	bad := fmt.Errorf("%w: page_token is not one this server gave", ErrBadQuery)
	if err != nil {
		return 0, 0, bad
	}
	a, b, ok := strings.Cut(string(raw), ":")
	ts, err1 := strconv.ParseInt(a, 10, 64)
	id, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return 0, 0, bad
	}
	return ts, id, nil
}

func (s *sqlStore) SpendSince(ctx context.Context, t time.Time) (map[string]float64, error) {
	rows, err := s.db.QueryContext(ctx, s.d.rebind(spendSQL), t.UnixMicro())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]float64{}
	for rows.Next() {
		var k string
		var v float64
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, rows.Err()
}

// pruneSQL deletes a batch of the oldest records before a time, found on the
// time-led index (TestQueriesUseIndexes), so that a large backlog is deleted a
// batch at a time, each a short transaction, instead of in one long one.
const pruneSQL = `DELETE FROM usage_requests WHERE id IN (SELECT id FROM usage_requests WHERE ts < ? ORDER BY ts LIMIT ?)`

func (s *sqlStore) Prune(ctx context.Context, before time.Time, limit int) (int64, error) {
	res, err := s.db.ExecContext(ctx, s.d.rebind(pruneSQL), before.UnixMicro(), limit)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (s *sqlStore) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.wmu.Lock()
	s.dropWriteConn()
	s.wmu.Unlock()
	err := s.db.Close()
	if s.onClose != nil {
		s.onClose()
	}
	return err
}
