package testutil

import (
	"net"
	"time"
)

// Refused reports whether a TCP connection to addr is refused (nothing listens).
func Refused(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return true
	}
	conn.Close()
	return false
}
