//go:build unix

package fs

import (
	"errors"
	"os"
	"syscall"
)

// packsSupported: packs need flock to give each pack one writer at a time.
const packsSupported = true

// tryLock takes the exclusive flock on f without waiting; false when another open file holds it.
// The lock belongs to f's open file description and goes with it when f is closed or the process
// dies.
func tryLock(f *os.File) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}
