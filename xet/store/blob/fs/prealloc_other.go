//go:build !linux

package fs

import "os"

// preallocate does nothing here (see the Linux version).
func preallocate(f *os.File, size int64) {}
