package fs

import (
	"os"
	"syscall"
)

// preallocate reserves size bytes for f (a new, empty file) in one extent request. On ext4 and XFS
// the write that follows then skips the per-block delayed-allocation bookkeeping, which costs about
// as much CPU as copying the data into the page cache. Failures (a filesystem without fallocate)
// are ignored: the write allocates as usual.
func preallocate(f *os.File, size int64) {
	if size <= 0 {
		return
	}
	for {
		err := syscall.Fallocate(int(f.Fd()), 0, 0, size)
		if err != syscall.EINTR {
			return
		}
	}
}
