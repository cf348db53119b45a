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
	closed atomic.Bool
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
		nv := make([]driver.NamedValue, 0, columnCount*min(len(batch), rowsPerInsert))
		for len(batch) > 0 {
			n := min(len(batch), rowsPerInsert)
			nv = nv[:0]
			for i := range batch[:n] {
				nv = appendRow(nv, &batch[i])
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

// dropWriteConn closes the writer's connection and its statements.
func (s *sqlStore) dropWriteConn() {
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

// appendRow adds r's values in columns' order, numbered on from nv's, each of
// a type the drivers take as it is (int64, float64, string, nil).
func appendRow(nv []driver.NamedValue, r *Record) []driver.NamedValue {
	var ttft any
	if r.TTFT > 0 {
		ttft = millis(r.TTFT)
	}
	var cost any
	if r.CostUSD != nil {
		cost = *r.CostUSD
	}
	t := r.Tokens
	for _, v := range [...]any{r.Time.UnixMicro(), r.RequestID, r.Surface, r.Endpoint, b2i(r.Stream), r.KeyID,
		r.Model, r.VirtualModel, r.Provider, r.TargetModel, encodeAttempts(r.Attempts), int64(len(r.Attempts)),
		int64(r.Failovers), int64(r.Resumes), b2i(r.Hedged), t.Prompt, t.Completion, t.Cached, t.CacheWrite, t.Reasoning, b2i(t.Estimated),
		cost, millis(r.Latency), ttft, int64(r.Status), r.ErrorCode} {
		nv = append(nv, driver.NamedValue{Ordinal: len(nv) + 1, Value: v})
	}
	return nv
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
	for rows.Next() {
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
