package testutil

import (
	"syscall"
	"time"
)

// CPUTime is the process's CPU time so far (user and system). Benchmarks report
// it per operation beside wall time: on a shared machine it is less swayed by
// what else runs.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
