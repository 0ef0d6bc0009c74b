//go:build unix

package download_test

import (
	"runtime"
	"syscall"
)

// rusageMaxRSS is getrusage's peak RSS of this process in bytes (macOS reports bytes, the other
// unix systems KiB).
func rusageMaxRSS() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return int64(ru.Maxrss)
	}
	return int64(ru.Maxrss) << 10
}
