//go:build !linux

package download

import "os"

// preallocate does nothing here (see the Linux version).
func preallocate(f *os.File, size int64) {}

// openDirect: no O_DIRECT here; everything is written through the page cache.
func openDirect(path string) *os.File { return nil }
