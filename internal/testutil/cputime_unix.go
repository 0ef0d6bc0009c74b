//go:build unix

package testutil

import (
	"syscall"
	"time"
)

// ProcessCPU returns the CPU time (user + system) this process has used so far. Benchmarks report
// bytes per CPU-second beside wall-clock MB/s: on a shared machine the wall clock includes time when
// other processes had the cores.
func ProcessCPU() time.Duration {
	u, s := ProcessCPUSplit()
	return u + s
}

// ProcessCPUSplit returns the user and system CPU time this process has used so far.
func ProcessCPUSplit() (user, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}
