package redisstate

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/redis/go-redis/v9"
)

// go-redis logs through one process-wide logger (the standard library's, on
// stderr, by default): a Redis outage would print a line per failed dial outside
// Switchyard's structured log. The first Open routes it into that client's log at
// debug level; outages are reported once, by health, at error level.
var routeLogs sync.Once

type debugLogger struct{ log *slog.Logger }

func (l debugLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.DebugContext(ctx, "redis client: "+fmt.Sprintf(format, v...))
}

func routeLibraryLogs(log *slog.Logger) {
	routeLogs.Do(func() { redis.SetLogger(debugLogger{log: log}) })
}
