//go:build !linux

package fs

import "os"

// datasync makes f's data durable.
func datasync(f *os.File) error { return f.Sync() }
