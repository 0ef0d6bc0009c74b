package download

import "os"

// SetStartWriteback replaces the kernel request of writeback for a test; the returned function
// restores it.
func SetStartWriteback(f func(*os.File)) (restore func()) {
	old := startWriteback
	startWriteback = f
	return func() { startWriteback = old }
}
