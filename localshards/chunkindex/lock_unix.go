//go:build unix

package chunkindex

import (
	"os"
	"syscall"
)

// locks: partial records are locked here.
const locks = true

// lockFile takes an exclusive lock on f without waiting (released when f is closed, or the
// process dies).
func lockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == syscall.EINTR {
			continue
		}
		if err == syscall.EWOULDBLOCK {
			return ErrBusy
		}
		return err
	}
}
