//go:build !windows

package fs

import "os"

// flushDir makes the entries of dir (names linked or renamed into it) durable: fsync of the
// directory, which POSIX file systems need before a new name survives a power loss.
func flushDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
