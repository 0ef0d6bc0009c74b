//go:build unix

package chunk

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user + system) used by this process so far. Benchmarks report
// bytes per CPU-second beside wall-clock MB/s: on a shared machine the wall clock includes time
// when other processes had the cores.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
