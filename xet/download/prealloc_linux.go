package download

import (
	"os"
	"syscall"
)

// preallocate reserves the output's blocks in one request before the jobs write it: the writes
// then skip the filesystem's per-block delayed allocation (ext4, XFS), a large part of what a
// buffered write costs. Failure (no fallocate here) is harmless.
func preallocate(f *os.File, size int64) {
	if size <= 0 {
		return
	}
	for syscall.Fallocate(int(f.Fd()), 0, 0, size) == syscall.EINTR {
	}
}

// openDirect opens path (the temp file, already created) again for O_DIRECT writes, or returns
// nil when the filesystem does not support them (tmpfs, some FUSE): then everything is written
// through the page cache.
func openDirect(path string) *os.File {
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_DIRECT, 0)
	if err != nil {
		return nil
	}
	return f
}
