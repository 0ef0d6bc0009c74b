//go:build !linux

package store

import "os"

// datasync makes f's data durable.
func datasync(f *os.File) error { return f.Sync() }
