// Package reqid makes the request ids Switchyard gives requests that came
// without one.
package reqid

import (
	"crypto/rand"
	"encoding/hex"
	"time"
)

// New is 24 hex digits: now in Unix milliseconds (6 bytes, big-endian), then
// 6 random bytes. Ids that follow time keep the usage ledger's request_id
// index growing at its end: random ones write all over it, and once it
// outgrows SQLite's page cache a record costs ~3× as much to store
// (BenchmarkSQLiteWrite in usage).
func New(now time.Time) string {
	var b [12]byte
	ms := uint64(now.UnixMilli())
	for i := 0; i < 6; i++ {
		b[i] = byte(ms >> (40 - 8*i))
	}
	_, _ = rand.Read(b[6:])
	return hex.EncodeToString(b[:])
}
