//go:build unix

package localshards

import (
	"syscall"
	"time"
)

// cpuTime returns the process's user+system CPU time (benchmarks report it beside wall time, which
// other load on a shared machine inflates).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
