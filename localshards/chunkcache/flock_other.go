//go:build !unix

package chunkcache

import "os"

// Without flock the accounting is shared by the goroutines of one process only (the mount runs on
// Linux; the cache builds everywhere).
func flock(*os.File) error { return nil }

func funlock(*os.File) {}

// linked reports whether the file fi describes still has a name (always, here).
func linked(os.FileInfo) bool { return true }
