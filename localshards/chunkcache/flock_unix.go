//go:build unix

package chunkcache

import (
	"os"
	"syscall"
)

// flock takes the exclusive lock of f, waiting for other processes.
func flock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			return err
		}
	}
}

func funlock(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }

// linked reports whether the file fi describes still has a name (another process's eviction did not
// remove it).
func linked(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return !ok || st.Nlink > 0
}
