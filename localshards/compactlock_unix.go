//go:build unix

package localshards

import (
	"os"
	"path/filepath"
	"syscall"
)

// lockCompaction takes the cache directory's compaction lock (an flock on compactLockName) without
// waiting. ok is false when another process holds it, or it cannot be taken: the caller then
// leaves compaction to that process. unlock releases it.
func lockCompaction(dir string) (unlock func(), ok bool) {
	f, err := os.OpenFile(filepath.Join(dir, compactLockName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	return func() { f.Close() }, true
}
